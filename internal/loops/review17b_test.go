// A class loops17b's absolute-path rule (an absolute path named by its
// last two components) refused: the rule is gone.

package loops

import "testing"

// TestAbsolutePathsOfOneTail: an absolute path is named by its last two
// components, so that a directory named by its relative and its absolute
// path is one question; paths that differ only above those two (the same
// file of several sites, the same dated folder of several databases) are
// other questions, even when each answers the same.
func TestAbsolutePathsOfOneTail(t *testing.T) {
	run := func(id string, cmds []string, answer string) asPlay {
		w := asRunOf(id, "shell", false)
		for _, c := range cmds {
			w.t("", asOK("run_command", obj{"command": c}, answer))
		}
		return playAs(w.run)
	}
	sites := []string{"cat /srv/shop/current/config.yaml", "cat /srv/blog/current/config.yaml",
		"cat /srv/docs/current/config.yaml", "cat /srv/wiki/current/config.yaml", "cat /srv/api/current/config.yaml"}
	if p := run("sites", sites, elRun("listen: 8080\nlog: info", "", 0)); p.refusedAt >= 0 {
		t.Errorf("one file of five sites, alike: refused at %d: %v", p.refusedAt, p.v)
	}
	dbs := []string{"ls /backups/orders/2026/12", "ls /backups/users/2026/12", "ls /backups/stock/2026/12",
		"ls /backups/audit/2026/12", "ls /backups/mail/2026/12"}
	if p := run("backups", dbs, elRun("", "", 0)); p.refusedAt >= 0 {
		t.Errorf("one month's folder of five databases, each empty: refused at %d: %v", p.refusedAt, p.v)
	}
}
