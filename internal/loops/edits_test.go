package loops

import (
	"fmt"
	"testing"
)

// TestEditsSameFailure: writes to one thing (a notebook's cell, a file by
// its path) with other contents each time, each followed by the same call
// failing the same way (its counters aside), do not excuse the failure:
// after three, the fourth write there is refused. Edits whose failure
// moves, edits that make the run pass, edits of other things, writes that
// name nothing, and edits followed by successful runs go on.
func TestEditsSameFailure(t *testing.T) {
	edit := func(i int) op {
		return write("overwrite_cell_source", fmt.Sprintf(`{"cell_index":4,"cell_source":"df = load()\n%sdf.groupby('day').sum()"}`, []string{"", "# by day\n", "\n", "x = 1\n", "# again\n", "\n\n"}[i%6]), marshalString("Cell 4 overwritten"))
	}
	run := func(n int, exc string) op {
		return failingWith("execute_cell", `{"cell_index":4}`, "tool_error", fmt.Sprintf("Cell In[%d], line 3\n%s", n, exc))
	}
	same := "AttributeError: 'DataFrame' object has no attribute 'created'"
	var moving, passes, others, unnamed, ok []op
	for i := 0; i < 5; i++ {
		moving = append(moving, edit(i), run(10+i, fmt.Sprintf("KeyError: 'Column not found: col%c'", 'a'+i)))
		others = append(others, write("Edit", fmt.Sprintf(`{"file_path":"/repo/f%d.go","new_string":"x","old_string":"y"}`, i), marshalString("updated")),
			failingWith("Bash", `{"command":"go test ./..."}`, "tool_error", "--- FAIL: TestParse\nFAIL"))
		unnamed = append(unnamed, write("run_sql", fmt.Sprintf(`{"sql":"UPDATE t SET a = %d"}`, i), marshalString("1 row")),
			failingWith("check", `{"what":"t"}`, "tool_error", "CheckError: a is out of range"))
		ok = append(ok, edit(i), call("execute_cell", `{"cell_index":4}`, marshalString("day\n2026-12-01 41822.10")))
		if i < 2 {
			passes = append(passes, edit(i), run(20+i, same))
		} else {
			passes = append(passes, edit(i), call("execute_cell", `{"cell_index":4}`, marshalString(fmt.Sprintf("total %d", i))))
		}
	}
	runCases(t, []testCase{
		{"one cell edited trivially, the same traceback each run", nil, []op{
			edit(0), run(12, same), edit(1), run(13, same), edit(2), run(14, same), refused(edit(3), "same_error"),
		}},
		{"the failure moves with each edit", nil, moving},
		{"edits that make the run pass", nil, passes},
		{"edits of other files", nil, others},
		{"writes that name nothing", nil, unnamed},
		{"edits followed by runs that succeed", nil, ok},
	})
}
