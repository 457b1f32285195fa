package loops

import (
	"fmt"
	"testing"
)

// TestCountedWriteCycle: a write made again with the same arguments,
// whose answers (its own, or a read's after it) move only in a count
// that grows one step each time, a stamp or an id, is the same cycle
// going round: a row appended again, its range one row down; a job
// re-run, its attempt up and its times new. Answers whose numbers move
// otherwise (a simulation's state), shrink (failures fixed), or sit in
// the text ("3 failed") go on.
func TestCountedWriteCycle(t *testing.T) {
	var appendRow, rerun, step, shrink, prose, varied []op
	for i := 0; i < 5; i++ {
		appendRow = append(appendRow, write("append_rows", `{"sheet":"Renewals","values":[["Parsec",24000]]}`,
			fmt.Sprintf(`{"tableRange":"Renewals!A1:D%d","updates":{"updatedRange":"Renewals!A%d:D%d","updatedRows":1}}`, 41+i, 42+i, 42+i)))
		rerun = append(rerun, write("rerun_job", `{"run_id":12290411}`, `{"message":"re-run requested"}`),
			call("get_run", `{"run_id":12290411}`, fmt.Sprintf(`{"id":12290411,"run_attempt":%d,"conclusion":"failure","updated_at":"2026-12-04T21:%02d:%02dZ","url":"https://ci.example/runs/12290411/attempts/%d"}`, i+2, 10+i*3, i*7%60, i+2)))
		pos := []int{0, 3, 4, 9, 10}[i]
		step = append(step, write("world_step", `{"ticks":1}`, fmt.Sprintf(`{"units":[{"id":"u1","at":[%d,2]}]}`, pos)))
		shrink = append(shrink, write("edit", `{"path":"calc.py","new":"a+b"}`, `"ok"`), call("run_tests", `{}`, fmt.Sprintf(`{"failed":%d,"passed":%d}`, 5-i, 7+i)))
		prose = append(prose, write("click", `{"element":"Load more"}`, `"ok"`), call("snapshot", `{}`, fmt.Sprintf(`"- listitem %d"`, i+1)))
		varied = append(varied, write("add_note", `{"note":"on call"}`, fmt.Sprintf(`{"count":%d}`, []int{1, 3, 4, 7, 8}[i])))
	}
	appendRow[3] = refused(appendRow[3], "short_cycle")
	rerun[6] = refused(rerun[6], "short_cycle")
	runCases(t, []testCase{
		{"a row appended again", nil, appendRow[:4]},
		{"a job re-run to the same failure", nil, rerun[:7]},
		{"a simulation's state moving", nil, step},
		{"failures that shrink", nil, shrink},
		{"a number in the text", nil, prose},
		{"a count that others move too", nil, varied},
	})
}

// FuzzCountedAnswer: any answer reads without panic, and one whose
// numbers are all masked or counted reads as its own template again.
func FuzzCountedAnswer(f *testing.F) {
	for _, s := range []string{`{"range":"A1:D42","n":3}`, `"3 failed"`, `"2026-12-04T21:40:00Z r-5512093385170021"`, `""`, `1`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		t1, c1 := countedAnswer(b)
		t2, c2 := countedAnswer(b)
		if t1 != t2 || c1 != c2 {
			t.Fatalf("countedAnswer(%q) not stable", b)
		}
		if t1 == 0 && c1 != (counts{}) {
			t.Fatalf("countedAnswer(%q): counts without a template", b)
		}
		if !steps(&c1, &c1, &c1) {
			t.Fatalf("countedAnswer(%q): one answer three times is not one step", b)
		}
	})
}
