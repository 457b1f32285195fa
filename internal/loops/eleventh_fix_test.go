package loops

import (
	"fmt"
	"testing"
)

// TestCommandPlumbing: a command whose output is only shown another way
// (its errors joined to it, piped into a pager or a cut at its end, a
// pager set before it) asks what the command asks; a pipe into a filter,
// or a stage in the middle, asks something else.
func TestCommandPlumbing(t *testing.T) {
	same := [][2]string{
		{`{"command":"go build ./..."}`, `{"command":"go build ./... 2>&1 | cat"}`},
		{`{"command":"go build ./..."}`, `{"command":"go build ./... 2>&1 | less -FRX"}`},
		{`{"command":"go build ./..."}`, `{"command":"go build ./... 2>/dev/null | tail -50"}`},
		{`{"command":"git log --oneline"}`, `{"command":"PAGER=cat git log --oneline"}`},
		{`{"command":"git log --oneline"}`, `{"command":"git log --oneline | head -n 20"}`},
	}
	for _, p := range same {
		if foldArgs("t", []byte(p[0])) != foldArgs("t", []byte(p[1])) {
			t.Errorf("%s and %s: two questions, want one", p[0], p[1])
		}
	}
	differ := [][2]string{
		{`{"command":"ps aux"}`, `{"command":"ps aux | grep nginx"}`},
		{`{"command":"cat app.log | head -n 5 | grep error"}`, `{"command":"cat app.log | grep error"}`},
		{`{"command":"cat app.log"}`, `{"command":"cat app.log | wc -l"}`},
		{`{"command":"make"}`, `{"command":"make 2>&1 > build.log"}`},
		{`{"sql":"SELECT id FROM t WHERE a = 1"}`, `{"sql":"SELECT id FROM t WHERE a = 2"}`},
		{`{"filter":"REGION=EU"}`, `{"filter":"REGION=US"}`},
		{`{"command":"HOME=/tmp/a make"}`, `{"command":"make"}`},
	}
	for _, p := range differ {
		if foldArgs("t", []byte(p[0])) == foldArgs("t", []byte(p[1])) {
			t.Errorf("%s and %s: one question, want two", p[0], p[1])
		}
	}
}

// TestEmptySearchReworded: a search in words that finds nothing, asked
// again in other words that share one, is refused at its fourth asking
// after three empty answers; searches that share no word, or whose texts
// name their window in numbers (a sweep over weeks, each empty), go on.
func TestEmptySearchReworded(t *testing.T) {
	empty := egJSON(obj{"entities": arr{}, "relations": arr{}})
	run := func(id string, qs []string) asPlay {
		w := asRunOf(id, "memory", false)
		for _, q := range qs {
			w.t("", asOK("search_nodes", obj{"query": q}, empty))
		}
		return playAs(w.run)
	}
	if p := run("reworded", []string{"Dee employer", "Dee Okafor company", "where does Dee work", "Dee's workplace", "employer of Dee"}); p.refusedAt != 3 || p.v.Detector != "rephrase" {
		t.Errorf("one search reworded, empty each time: refused at %d (%v), want the fourth call", p.refusedAt, p.v)
	}
	if p := run("unrelated", []string{"Globex renewal", "Initech contact", "Umbrella invoice", "Hooli owner", "Acme address"}); p.refusedAt >= 0 {
		t.Errorf("other searches, empty each time: refused at %d: %v", p.refusedAt, p.v)
	}
	var weeks []string
	for w := 0; w < 6; w++ {
		weeks = append(weeks, fmt.Sprintf("invoices from supplier after:2026-11-%02d before:2026-11-%02d", 1+w*4, 5+w*4))
	}
	if p := run("weeks", weeks); p.refusedAt >= 0 {
		t.Errorf("a sweep over weeks, empty each time: refused at %d: %v", p.refusedAt, p.v)
	}
}
