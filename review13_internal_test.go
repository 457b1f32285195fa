package reach

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// An attempt under another attempt (a tool calling a tool in-process),
// each with a deadline at its start (a timeout of zero), sooner or later
// than its parent's, or passing as the attempt ends, reports what context.WithTimeoutCause would, when it
// ends (end reads the clock once for both deadlines) and after.
func TestReview13AttemptUnderAttemptAtTheEdges(t *testing.T) {
	errStop := errors.New("the request stopped")
	for _, outer := range []time.Duration{0, time.Second, 3 * time.Second} {
		for _, inner := range []time.Duration{0, time.Second, 2 * time.Second} {
			for _, steps := range [][]string{{"end"}, {"sleep", "end"}, {"cancel", "end"}, {"end", "sleep"}, {"wait", "end"}, {"wait", "sleep", "end"}} {
				if steps[0] == "cancel" && min(outer, inner) == 0 {
					// A deadline passed, then the request's cancel, before
					// anything looked: the attempt cannot tell which came
					// first, and reports the cancel (as it did before).
					continue
				}
				name := outer.String() + "/" + inner.String() + "/" + steps[0] + "," + steps[len(steps)-1]
				t.Run(name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						wroot, wcancel := context.WithCancelCause(context.Background())
						groot, gcancel := context.WithCancelCause(context.Background())
						wouter, wostop := context.WithTimeoutCause(wroot, outer, errAttemptTimeout)
						gouter := newAttempt(groot, &Frame{}, nil, outer)
						want, wend := context.WithTimeoutCause(wouter, inner, errAttemptTimeout)
						got := newAttemptAt(gouter, &Frame{}, nil, time.Now(), inner)
						for _, s := range steps {
							switch s {
							case "sleep":
								time.Sleep(time.Second)
								synctest.Wait()
							case "cancel":
								wcancel(errStop)
								gcancel(errStop)
							case "wait":
								want.Done()
								got.Done()
							case "end":
								wend()
								got.end()
							}
						}
						if g, w := got.Err(), want.Err(); g != w {
							t.Errorf("Err %v, want %v", g, w)
						}
						if g, w := context.Cause(got), context.Cause(want); g != w {
							t.Errorf("Cause %v, want %v", g, w)
						}
						wend()
						got.end()
						wostop()
						gouter.end()
						wcancel(nil)
						gcancel(nil)
					})
				})
			}
		}
	}
}
