package loops

import (
	"fmt"
	"testing"
)

// The fixes the tenth probe asked for, each with a near-miss it must not
// refuse.

// A calendar asked for a window shifted an hour at a time, the same answer
// each time (or the same but for the window it echoes): the fourth window
// is refused. Windows that find other events, windows that find nothing
// (one line that says so), a window of dates alone, a call of date-times
// and nothing else, and the same answer after a write go on.
func TestWindowShiftedSameAnswer(t *testing.T) {
	run := func(id string, args func(i int) obj, answer func(i int) string, writeAt int) asPlay {
		w := asRunOf(id, "calendar", false).acc("write", "create-event")
		for i := 0; i < 5; i++ {
			if i == writeAt {
				w.t("", asOK("create-event", obj{"calendarId": "primary", "summary": "Hold"}, "Event created: Hold (q8w2)"))
			}
			w.t("", asOK("list-events", args(i), answer(i)))
		}
		return playAs(w.run)
	}
	window := func(i int) obj {
		return obj{"calendarId": "primary", "timeMin": fmt.Sprintf("2026-12-08T%02d:00:00Z", 9+i), "timeMax": fmt.Sprintf("2026-12-08T%02d:00:00Z", 10+i)}
	}
	full := func(int) string { return tnCalEvents([3]string{"Company offsite", "2026-12-08", "2026-12-09"}) }
	echoed := func(i int) string {
		min, max := window(i)["timeMin"].(string), window(i)["timeMax"].(string)
		return tnFreeBusy(min, max, [2]string{min, max})
	}
	if p := run("same", window, full, -1); p.refusedAt != 3 || p.v.Detector != "repeat" {
		t.Errorf("the same full day in each window: refused at %d (%v), want the fourth call", p.refusedAt, p.v)
	}
	if p := run("echoed", window, echoed, -1); p.refusedAt != 3 {
		t.Errorf("all busy, the window echoed: refused at %d (%v), want the fourth call", p.refusedAt, p.v)
	}
	other := func(i int) string {
		return tnCalEvents([3]string{[]string{"Standup", "Design review", "Lunch", "1:1", "Retro"}[i], "2026-12-08T09:00:00Z", "2026-12-08T10:00:00Z"})
	}
	if p := run("other-events", window, other, -1); p.refusedAt >= 0 {
		t.Errorf("another event in each window: refused at %d: %v", p.refusedAt, p.v)
	}
	days := func(i int) obj {
		return obj{"calendarId": "primary", "timeMin": fmt.Sprintf("2026-12-%02d", 8+i), "timeMax": fmt.Sprintf("2026-12-%02d", 9+i)}
	}
	if p := run("days", days, full, -1); p.refusedAt >= 0 {
		t.Errorf("windows of dates alone: refused at %d: %v", p.refusedAt, p.v)
	}
	alone := func(i int) obj {
		return obj{"timeMin": fmt.Sprintf("2026-12-08T%02d:00:00Z", 9+i), "timeMax": fmt.Sprintf("2026-12-08T%02d:00:00Z", 10+i)}
	}
	if p := run("times-alone", alone, full, -1); p.refusedAt >= 0 {
		t.Errorf("date-times alone (a batch): refused at %d: %v", p.refusedAt, p.v)
	}
	nothing := func(i int) string {
		w := window(i)
		return fmt.Sprintf("No events found between %s and %s.", w["timeMin"], w["timeMax"])
	}
	if p := run("nothing-found", window, nothing, -1); p.refusedAt >= 0 {
		t.Errorf("one line saying nothing was found in each window: refused at %d: %v", p.refusedAt, p.v)
	}
	if p := run("after-write", window, full, 3); p.refusedAt >= 0 && p.refusedAt < 5 {
		t.Errorf("a write before the fourth window: refused at %d: %v", p.refusedAt, p.v)
	}
}

// A listing asked by the cursor each answer hands back, answered with the
// same page each time but for that cursor: the server ignores it, and the
// fifth call is refused. Pages that move, a feed polled whose pages hold
// nothing but a cursor and a flag, and a cursor that goes with another
// filter go on.
func TestCursorIgnored(t *testing.T) {
	run := func(id string, page func(p int) arr, filter func(p int) string) asPlay {
		w := asRunOf(id, "research", false)
		cur := ""
		for p := 0; p < 6; p++ {
			next := fmt.Sprintf("eyJ0cyI6MTc2NDg5%04d", 3400+p*17)
			a := obj{"limit": 10}
			if cur != "" {
				a["cursor"] = cur
			}
			if filter != nil {
				a["category"] = filter(p)
			}
			w.t("", asOK("list_products", a, egJSON(obj{"data": page(p), "has_more": true, "next_cursor": next})))
			cur = next
		}
		return playAs(w.run)
	}
	items := func(from int) arr {
		var a arr
		for i := from; i < from+10; i++ {
			a = append(a, obj{"id": fmt.Sprintf("prod_%05d", 10007*i%99991), "name": fmt.Sprintf("Alto %d", i), "price": 40 + i*13})
		}
		return a
	}
	if p := run("ignored", func(int) arr { return items(0) }, nil); p.refusedAt != 4 || p.v.Detector != "repeat" {
		t.Errorf("the same page for each cursor: refused at %d (%v), want the fifth call", p.refusedAt, p.v)
	}
	if p := run("pages", func(p int) arr { return items(p * 10) }, nil); p.refusedAt >= 0 {
		t.Errorf("pages that move: refused at %d: %v", p.refusedAt, p.v)
	}
	if p := run("feed", func(int) arr { return arr{} }, nil); p.refusedAt >= 0 {
		t.Errorf("a feed polled, nothing in it: refused at %d: %v", p.refusedAt, p.v)
	}
	if p := run("filters", func(int) arr { return items(0) }, func(p int) string { return []string{"trail", "road", "hike", "kids", "sale", "new"}[p] }); p.refusedAt >= 0 {
		t.Errorf("another category each time: refused at %d: %v", p.refusedAt, p.v)
	}
}

// A table described again under its name in quotes, in other case: the
// same question, and its third answer alike refuses the next asking.
// Other tables, quoted or not, go on.
func TestQuotedName(t *testing.T) {
	cols := egJSON(arr{obj{"name": "id", "type": "INTEGER"}, obj{"name": "status", "type": "TEXT"}, obj{"name": "total", "type": "REAL"}})
	run := func(id string, names []string, answer func(i int) string) asPlay {
		w := asRunOf(id, "database", false)
		for i, n := range names {
			w.t("", asOK("describe_table", obj{"table_name": n}, answer(i)))
		}
		return playAs(w.run)
	}
	same := func(int) string { return cols }
	if p := run("quoted", []string{"orders", "\"orders\"", "`orders`", "\"Orders\"", "ORDERS"}, same); p.refusedAt != 3 || p.v.Detector != "rephrase" {
		t.Errorf("one table quoted other ways: refused at %d (%v), want the fourth call", p.refusedAt, p.v)
	}
	tables := []string{"orders", "\"customers\"", "`invoices`", "'payments'", "refunds"}
	other := func(i int) string { return egJSON(arr{obj{"name": tables[i] + "_id", "type": "INTEGER"}}) }
	if p := run("other-tables", tables, other); p.refusedAt >= 0 {
		t.Errorf("other tables, quoted: refused at %d: %v", p.refusedAt, p.v)
	}
	for _, c := range []struct{ in, out string }{{`\"orders\"`, "orders"}, {"`orders`", "orders"}, {"'orders'", "'orders'"}, {`\"a b\"`, `\"a b\"`}, {`\"\"`, `\"\"`}, {"'", "'"}, {"'o''", "'o''"}, {"orders", "orders"}} {
		if got := string(unquoteName([]byte(c.in))); got != c.out {
			t.Errorf("unquoteName(%s) = %s, want %s", c.in, got, c.out)
		}
	}
}
