package loops

import (
	"fmt"
	"testing"
)

// A flag switched on for each window of an experiment by one agent and
// off by another that reads the window first is not one write made again
// that changed nothing: each "on" sets back what the other agent set
// otherwise after looking. Answered alike ({"ok": true}), the two writes
// say nothing of what they set, and the agent's own writes in a row are a
// write made again; with nothing read in between, two agents switching a
// flag whose answers carry its version are still refused.
func TestWriteSetBackAfterAnotherAgentLooked(t *testing.T) {
	run := func(id string, read bool, answer func(on bool, v int) string) asPlay {
		w := asRunOf(id, "flags", false).acc("write", "patch_flag")
		a, b := s19As(w, "scheduler"), s19As(w, "analyst")
		v := 0
		for r := 0; r < 5; r++ {
			v++
			a.t("On.", asOK("patch_flag", obj{"flag": "new-checkout", "on": true}, answer(true, v)))
			if read {
				b.t("Reading.", asOK("get_conversion", obj{"flag": "new-checkout", "window": r + 1}, obj{"window": r + 1, "conversion": fmt.Sprintf("3.%d%%", r)}))
			}
			v++
			b.t("Off.", asOK("patch_flag", obj{"flag": "new-checkout", "on": false}, answer(false, v)))
		}
		return playAs(w.run)
	}
	if p := run("windows", true, s20Flag); p.refusedAt >= 0 {
		t.Errorf("a window read before each switch back: refused at %d: %v", p.refusedAt, p.v)
	}
	alike := func(bool, int) string { return `{"ok": true}` }
	if p := run("windows-answered-alike", true, alike); p.refusedAt < 0 || p.v.Detector != "short_cycle" {
		t.Errorf("each switch answered alike: refused at %d (%v), want short_cycle", p.refusedAt, p.v)
	}
	if p := run("nothing-read", false, s20Flag); p.refusedAt < 0 || p.v.Detector != "short_cycle" {
		t.Errorf("nothing read in between: refused at %d (%v), want short_cycle", p.refusedAt, p.v)
	}
}

// A slot looked for day by day, each day's window busy from end to end
// (the answer naming the window asked), asks of another day each time, as
// windows of dates alone do: it goes on. Hour by hour over one day, the
// same answers are one window shifted (TestWindowShiftedSameAnswer).
func TestWindowOnOtherDays(t *testing.T) {
	run := func(id string, window func(i int) [2]string) asPlay {
		w := asRunOf(id, "calendar", false)
		for i := 0; i < 6; i++ {
			win := window(i)
			w.t("", asOK("freebusy", obj{"timeMin": win[0], "timeMax": win[1], "items": arr{obj{"id": "mia@shop.example"}}},
				obj{"calendars": obj{"mia@shop.example": obj{"busy": arr{obj{"start": win[0], "end": win[1]}}}}}))
		}
		return playAs(w.run)
	}
	days := func(i int) [2]string {
		d := fmt.Sprintf("2026-12-%02d", 8+i)
		return [2]string{d + "T08:00:00Z", d + "T17:00:00Z"}
	}
	if p := run("days", days); p.refusedAt >= 0 {
		t.Errorf("another day each time: refused at %d: %v", p.refusedAt, p.v)
	}
	hours := func(i int) [2]string {
		return [2]string{fmt.Sprintf("2026-12-08T%02d:00:00Z", 8+i), fmt.Sprintf("2026-12-08T%02d:00:00Z", 9+i)}
	}
	if p := run("hours", hours); p.refusedAt != 3 || p.v.Detector != "repeat" {
		t.Errorf("hours of one day: refused at %d (%v), want the fourth, repeat", p.refusedAt, p.v)
	}
}

// A command respelled (its flags, its folder said out loud) whose failing
// output names one thing word for word, a state lock by its id, an
// unmerged file, is one complaint about that thing: the fourth is
// refused. Commands failing alike whose output names nothing (a unit's
// dependency failed) or names each its own thing, or only a log of its
// run, are a batch; and a log whose lines are stamped anew each run, or
// that names its file by when it was made, names the same.
func TestComplaintNamingOneThing(t *testing.T) {
	run := func(id string, cmds []string, out func(i int) string) asPlay {
		w := asRunOf(id, "shell", false).acc("write", "run_shell")
		for i, c := range cmds {
			w.t("", asOK("run_shell", obj{"cmd": c}, s17Shell(1, "", out(i))))
		}
		return playAs(w.run)
	}
	respelled := []string{"terraform apply -auto-approve", "terraform -chdir=infra/prod apply -auto-approve", "terraform apply -auto-approve -lock=true", "terraform apply -auto-approve -input=false", "terraform apply"}
	lock := func(int) string {
		return "Error: Error acquiring the state lock\nLock Info:\n  ID:        5b1e0c7a-2d4f-8e31-9a0b-77c2d1e4f6a9\n  Who:       ci@runner-12"
	}
	if p := run("lock", respelled, lock); p.refusedAt != 3 || p.v.Detector != "same_error" {
		t.Errorf("one lock named under respelled commands: refused at %d (%v), want the fourth, same_error", p.refusedAt, p.v)
	}
	stamped := func(i int) string {
		return fmt.Sprintf("09:%02d:%02d  Running with dbt=1.8.2\n09:%02d:%02d  Compilation Error in model orders_daily (models/marts/orders_daily.sql)\n  stg_order_items was not found\nA log of this run: /root/.dbt/logs/2026-12-06T09_%02d_11Z.log", 20+i, 3+i*7, 20+i, 3+i*7, 20+i)
	}
	if p := run("stamped", []string{"dbt run -s orders_daily", "dbt run --select orders_daily", "dbt run --models orders_daily", "dbt run -s orders_daily --fail-fast"}, stamped); p.refusedAt != 3 {
		t.Errorf("one model's error, each line stamped anew: refused at %d (%v), want the fourth", p.refusedAt, p.v)
	}
	units := []string{"systemctl start web.service", "systemctl start api.service", "systemctl start worker.service", "systemctl start cron.service", "systemctl start mail.service"}
	dep := func(int) string { return "A dependency job for the unit failed. See 'journalctl -xe' for details." }
	if p := run("units", units, dep); p.refusedAt >= 0 {
		t.Errorf("other units, nothing named: refused at %d: %v", p.refusedAt, p.v)
	}
	files := []string{"csvlint data/a1.csv", "csvlint data/b2.csv", "csvlint data/c3.csv", "csvlint data/d4.csv", "csvlint data/e5.csv"}
	own := func(i int) string {
		return "error: data/" + []string{"a1", "b2", "c3", "d4", "e5"}[i] + ".csv: header row missing"
	}
	if p := run("files", files, own); p.refusedAt >= 0 {
		t.Errorf("other files, each named: refused at %d: %v", p.refusedAt, p.v)
	}
	targets := []string{"make -C services/api", "make -C services/web", "make -C services/worker", "make -C services/docs", "make -C services/cli"}
	logged := func(int) string { return "Build failed. See /var/log/build.log for details." }
	if p := run("log", targets, logged); p.refusedAt >= 0 {
		t.Errorf("other targets, only their log named: refused at %d: %v", p.refusedAt, p.v)
	}
}

// A coder rewriting one file and an executor running it, two agents of
// one group chat, each run failing the same way: the fourth write to the
// file is refused, as one agent's edits that the failure does not see
// are. Another agent's call that does not name the file (a monitor whose
// own check fails alike) is no run of it, and runs that fail otherwise
// each time go on.
func TestEditRunByAnotherAgent(t *testing.T) {
	run := func(id string, runArgs obj, fail func(r int) string) asPlay {
		w := asRunOf(id, "groupchat", false).acc("write", "write_file")
		coder, ex := s19As(w, "coder"), s19As(w, "executor")
		for r := 0; r < 5; r++ {
			coder.t("", asOK("write_file", obj{"path": "work/totals.py", "content": fmt.Sprintf("# try %d\nprint(df['revenue_%d'].sum())", r, r)}, "Wrote work/totals.py"))
			ex.t("", asOK("run_python", runArgs, s17Shell(1, "", fail(r))))
		}
		return playAs(w.run)
	}
	same := func(int) string { return "Traceback (most recent call last):\nKeyError: 'revenue'" }
	if p := run("same", obj{"path": "work/totals.py"}, same); p.refusedAt != 6 || p.v.Detector != "same_error" {
		t.Errorf("the file run by another agent, failing alike: refused at %d (%v), want the fourth write, same_error", p.refusedAt, p.v)
	}
	if p := run("other-call", obj{"check": "disk", "host": "db-1"}, same); p.refusedAt >= 0 {
		t.Errorf("another agent's call not naming the file: refused at %d: %v", p.refusedAt, p.v)
	}
	other := func(r int) string {
		return "Traceback (most recent call last):\n" + []string{"KeyError: 'revenue'", "TypeError: bad operand", "ValueError: empty frame", "NameError: name 'pd' is not defined", "ZeroDivisionError: division by zero"}[r]
	}
	if p := run("other-failures", obj{"path": "work/totals.py"}, other); p.refusedAt >= 0 {
		t.Errorf("failing otherwise each time: refused at %d: %v", p.refusedAt, p.v)
	}
}

// A list written in one string (tags, fields) reordered, respaced or
// with an item said twice asks the same: answered alike, a spelling that
// adds nothing after three is refused. Lists naming another item each
// time (one service after another) answered alike are a batch and go on.
func TestListInOneStringReordered(t *testing.T) {
	run := func(id string, tags []string) asPlay {
		w := asRunOf(id, "monitoring", false)
		for _, tg := range tags {
			w.t("", asOK("list_monitors", obj{"monitor_tags": tg}, s20Monitors([3]string{"148203391", "Checkout p99 latency > 2s", "Alert"})))
		}
		return playAs(w.run)
	}
	if p := run("reordered", []string{"service:checkout,env:prod", "env:prod,service:checkout,team:payments", "team:payments,service:checkout", "env:prod,service:checkout,service:checkout", "service:checkout,team:payments,env:prod"}); p.refusedAt != 3 || p.v.Detector != "rephrase" {
		t.Errorf("one list reordered: refused at %d (%v), want the fourth, rephrase", p.refusedAt, p.v)
	}
	if p := run("services", []string{"service:checkout,env:prod", "service:cart,env:prod", "service:search,env:prod", "service:auth,env:prod", "service:mail,env:prod", "service:cdn,env:prod"}); p.refusedAt >= 0 {
		t.Errorf("another service each time: refused at %d: %v", p.refusedAt, p.v)
	}
}
