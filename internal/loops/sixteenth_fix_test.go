package loops

import (
	"fmt"
	"testing"
)

// TestWriteRespelledStamped: one write made again in other notations of
// its value, answered alike but for the update time it stamps, is refused
// at the fourth as the same write made again word for word is; the same
// write answered with a count that moves unevenly (stock sold between the
// calls) or with a state that changes is not refused by it.
func TestWriteRespelledStamped(t *testing.T) {
	w := map[string]string{"update_product_variant": "write"}
	prices := []any{"19.90", 19.9, "19.9", "19.900", 19.90}
	stamps := []string{"21:40:03", "21:40:58", "21:43:12", "21:43:30", "21:47:01"}
	play := func(answer func(i int) obj) (int, *Verdict) {
		var calls []asCall
		for i, p := range prices {
			calls = append(calls, asOK("update_product_variant", obj{"id": "gid://shopify/ProductVariant/44102938475", "price": p}, egJSON(answer(i))))
		}
		return thPlay(t, calls, w)
	}
	at, v := play(func(i int) obj {
		return obj{"productVariant": obj{"id": "gid://shopify/ProductVariant/44102938475", "price": "19.90", "updatedAt": "2026-12-05T" + stamps[i] + "Z"}, "userErrors": arr{}}
	})
	if at != 3 || v.Detector != "short_cycle" {
		t.Errorf("a price respelled, answered alike but for its stamp: refused at %d (%v), want 3 by short_cycle", at, v)
	}
	stock := []int{12, 9, 4, 3, 1}
	if at, v := play(func(i int) obj {
		return obj{"productVariant": obj{"id": "gid://shopify/ProductVariant/44102938475", "price": "19.90", "inventoryQuantity": stock[i], "updatedAt": "2026-12-05T" + stamps[i] + "Z"}}
	}); at >= 0 {
		t.Errorf("a price respelled while its stock sells: refused at %d (%v)", at, v)
	}
	states := []string{"draft", "pending", "active", "active", "active"}
	if at, v := play(func(i int) obj {
		return obj{"productVariant": obj{"id": "gid://shopify/ProductVariant/44102938475", "price": "19.90", "status": states[i], "updatedAt": "2026-12-05T" + stamps[i] + "Z"}}
	}); at >= 0 && at < 4 {
		t.Errorf("a price respelled while its state moves: refused at %d (%v), want at 4 or later", at, v)
	}
}

// TestQueryIDs: a workbook's tabs (gid=) or a design file's frames
// (node-id=) fetched one by one, answered alike, are other things asked
// and not refused; one page fetched again under tracking parameters
// (utm_source=, fbclid=) or with one tab's id and other tracking, answered
// alike, is still one question, refused.
func TestQueryIDs(t *testing.T) {
	fetch := func(urls ...string) []asCall {
		var calls []asCall
		for _, u := range urls {
			calls = append(calls, asOK("fetch", obj{"url": u}, "Date,Amount,Note\n"))
		}
		return calls
	}
	const sheet = "https://docs.google.com/spreadsheets/d/1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms/export?format=csv&gid="
	if at, v := thPlay(t, fetch(sheet+"0", sheet+"1834729", sheet+"220471", sheet+"99120", sheet+"771203"), nil); at >= 0 {
		t.Errorf("tabs of one workbook: refused at %d (%v)", at, v)
	}
	const frame = "https://www.figma.com/design/Xk3Qa9LmP2bRt7Yc/Shop-app?node-id="
	if at, v := thPlay(t, fetch(frame+"12-34", frame+"12-80", frame+"14-2", frame+"15-77"), nil); at >= 0 {
		t.Errorf("frames of one file: refused at %d (%v)", at, v)
	}
	const page = "https://shop.example/blog/spring-sale"
	if at, _ := thPlay(t, fetch(page+"?utm_source=news", page+"?utm_source=x&utm_id=42", page+"?fbclid=IwAR3xQ9", page+"?gclid=Cj0KCQ", page+"/"), nil); at < 0 || at > 4 {
		t.Errorf("one page under tracking parameters: refused at %d, want by the fifth", at)
	}
	if at, _ := thPlay(t, fetch(sheet+"99120&utm_source=a", sheet+"99120&utm_source=b", sheet+"99120&fbclid=IwAR", sheet+"99120&mc_cid=77a", sheet+"99120"), nil); at < 0 || at > 4 {
		t.Errorf("one tab under tracking parameters: refused at %d, want by the fifth", at)
	}
	for _, c := range []struct {
		url  string
		none bool
	}{
		{"https://a.example/p?gid=1", false},
		{"https://a.example/p?node-id=1-2", false},
		{"https://a.example/p?pageId=x9", false},
		{"https://a.example/p?fbclid=x", true},
		{"https://a.example/p?utm_id=4", true},
		{"https://a.example/p?sessionid=4", true},
		{"https://a.example/p?q=shoes", true},
		{"https://a.example/p?id=", true},
		{"https://a.example/p#id=4", true},
	} {
		if got := queryIDs([]byte(c.url)) == 0; got != c.none {
			t.Errorf("queryIDs(%q) == 0 is %v, want %v", c.url, got, c.none)
		}
	}
}

// TestAttemptCounted: a job re-run while the same step fails, its log the
// same but for the attempt number and the times, is refused at the fourth
// round; re-runs whose log names another failure each time, or whose
// numbers among words move otherwise (an item shown after each click), are
// not.
func TestAttemptCounted(t *testing.T) {
	w := map[string]string{"rerun_failed_jobs": "write"}
	play := func(log func(r int) string) (int, *Verdict) {
		var calls []asCall
		for r := 0; r < 4; r++ {
			calls = append(calls,
				asOK("rerun_failed_jobs", obj{"run_id": 12093384411}, "Re-run requested"),
				asOK("get_job_logs", obj{"run_id": 12093384411, "failed_only": true}, log(r)))
		}
		return thPlay(t, calls, w)
	}
	if at, v := play(func(r int) string {
		return fmt.Sprintf("Job 'test' attempt %d (job %d)\n2026-12-05T21:%02d:19.09Z FAIL src/checkout.test.ts\n##[error]Process completed with exit code 1.", r+2, 9120455+r*31, 10+r*7)
	}); at != 6 || v.Detector != "short_cycle" {
		t.Errorf("one step failing at each attempt: refused at %d (%v), want 6 (the fourth round) by short_cycle", at, v)
	}
	tests := []string{"checkout", "cart", "voucher", "login"}
	if at, v := play(func(r int) string {
		return fmt.Sprintf("Job 'test' attempt %d\nFAIL src/%s.test.ts\n##[error]Process completed with exit code 1.", r+2, tests[r])
	}); at >= 0 {
		t.Errorf("another test failing at each attempt: refused at %d (%v)", at, v)
	}
	if at, v := play(func(r int) string {
		return fmt.Sprintf("Job 'test' shard %d\nFAIL src/checkout.test.ts", r+2)
	}); at >= 0 {
		t.Errorf("another shard at each run: refused at %d (%v)", at, v)
	}
	for _, c := range []struct {
		text string
		want bool
	}{
		{"Job attempt ", true},
		{"(Attempt ", true},
		{"Retry #", true},
		{"try ", true},
		{"listitem ", false},
		{"reattempt ", false},
		{"attempt", false},
		{" ", false},
		{"", false},
	} {
		if got := attemptBefore([]byte(c.text)); got != c.want {
			t.Errorf("attemptBefore(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}
