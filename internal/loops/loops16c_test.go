package loops

import "testing"

// A wait is time passing when its arguments are a span of time alone;
// one that names what it waits for, or anything else beside the span,
// is a look like any other.
func TestTimePassing(t *testing.T) {
	d := New(nil)
	for _, c := range []struct {
		args string
		want bool
	}{
		{`{"time":2}`, true},
		{`{"seconds":5}`, true},
		{`{"duration":"500ms"}`, true},
		{`{"delay_ms":250,"timeout":30}`, true},
		{`{"text":"Order confirmed","time":5}`, false},
		{`{"textGone":"Loading"}`, false},
		{`{"time":"soon"}`, false},
		{`{"url":"https://example.com","time":2}`, false},
		{`{}`, false},
		{`{"ref":"e12"}`, false},
	} {
		if got := d.timePassing([]byte(c.args)); got != c.want {
			t.Errorf("timePassing(%s) = %v, want %v", c.args, got, c.want)
		}
	}
}
