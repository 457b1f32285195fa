package reach

// SetLetGo has rt call f with a call's id as a write of entities on a
// shared store has let go of their locks, before the call goes on
// (Runtime.lockLetGo): for tests in package reach_test. Set before rt runs
// calls.
func SetLetGo(rt *Runtime, f func(call string)) {
	rt.lockLetGo = func(c *Call) { f(c.ID) }
}
