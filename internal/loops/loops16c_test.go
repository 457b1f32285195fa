package loops

import (
	"fmt"
	"testing"
)

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

// The delayed Load more of review16b with items that never arrive: the
// wait between each click and its snapshot is time passing, and the
// snapshot that shows the same page after each click is still refused.
func TestWaitBetweenNoopClicks(t *testing.T) {
	const u = "https://shop.example.com/search?q=boots"
	w := asRunOf("wait-noop-load-more", "browser", true).acc("write", "browser_click")
	ref := 4
	for range 5 {
		w.t("", asOK("browser_click", obj{"element": "Load more button", "ref": fmt.Sprintf("e%d", ref)},
			nnPW("await page.getByRole('button', { name: 'Load more' }).click();", u, "boots", ref+1, "link \"Alto 2\"", "button \"Load more\"")))
		w.t("", asOK("browser_wait_for", obj{"time": 2}, "Waited for 2"))
		ref += 4
		w.t("", asOK("browser_snapshot", obj{}, svSnap(u, "boots", ref, "link \"Alto 2\"", "button \"Load more\"")))
	}
	p := playAs(w.run)
	if p.refusedAt < 0 || p.refusedAt%3 == 1 { // click, wait, snapshot: a wait is at 1 mod 3
		t.Errorf("load more, nothing arriving after the waits: refused at %d: %v", p.refusedAt, p.v)
	}
	t.Logf("refused at %d: %v", p.refusedAt, p.v)
}
