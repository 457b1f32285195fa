package loops

import (
	"strconv"
	"testing"
)

// BenchmarkRules27 measures Check and Done of one step on the paths the
// twenty-seventh probe's rules read, each step new so that nothing is
// refused: a conflict whose message names the call's seats (takenValues),
// a sensor's reading with its sample's stamp (a key's words, cached), and
// a failure of a type the streak does not know that names the operation it
// started (ownValue's words):
//
//	go test -run '^$' -bench 'Rules27' -benchmem -count 6 ./internal/loops/
func BenchmarkRules27(b *testing.B) {
	b.Run("conflict-named", func(b *testing.B) {
		d := New(nil)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			row := strconv.Itoa(i)
			s := Step{Tool: "seats_book", Args: []byte(`{"showtime":"st_22719","seats":["R` + row + `-7","R` + row + `-8"],"customer":"cu_8812"}`), Access: "write"}
			if v := d.Check(&s); v != nil {
				b.Fatalf("refused: %s", v.Message)
			}
			if i%3 == 2 {
				// A booking made now and then: the guard before this
				// rule took other seats refused alike for one complaint.
				d.Done(&s, Outcome{Result: []byte(`{"booking":"BK-` + row + `"}`)})
			} else {
				d.Done(&s, Outcome{Error: true, ErrorType: "conflict", Result: []byte(`"{\"error\":\"SEATS_UNAVAILABLE\",\"unavailable\":[\"R` + row + `-7\",\"R` + row + `-8\"],\"hold_expires\":null}"`)})
			}
			i++
		}
	})
	b.Run("reading-stamped", func(b *testing.B) {
		d := New(nil)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			n := strconv.Itoa(100000 + i)
			s := Step{Tool: "fermenter_reading", Args: []byte(`{"tank":"FV-3"}`), Access: "read"}
			if v := d.Check(&s); v != nil {
				b.Fatalf("refused: %s", v.Message)
			}
			d.Done(&s, Outcome{Result: []byte(`{"tank":"FV-3","specific_gravity":1.` + n + `,"temperature_c":19.5,"sampled_at":"2026-12-07T07:` + strconv.Itoa(10+i%50) + `:00Z","sample_age_s":` + strconv.Itoa(i%60) + `,"sensor":{"model":"Tilt Pro","battery_pct":88}}`)})
			i++
		}
	})
	b.Run("failure-operation", func(b *testing.B) {
		d := New(nil)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			n := strconv.Itoa(i)
			s := Step{Tool: "washer_start", Args: []byte(`{"appliance":"washer-` + n + `","programme":"Cotton 40","spin_rpm":1200}`), Access: "write"}
			if v := d.Check(&s); v != nil {
				b.Fatalf("refused: %s", v.Message)
			}
			d.Done(&s, Outcome{Error: true, ErrorType: "precondition", Result: []byte(`"{\"key\":\"BSH.Common.Error.DoorOpen\",\"description\":\"Door of washer-` + n + ` is open\",\"operationId\":\"7c0e189b0a5a` + n + `\"}"`)})
			i++
		}
	})
}

// BenchmarkTakenValues is what a conflict's failure pays for the values
// of the call its message names (takenValues), alone: one scan of the
// arguments and, for each value, one pass over the message.
//
//	go test -run '^$' -bench 'TakenValues' -benchmem -count 6 ./internal/loops/
func BenchmarkTakenValues(b *testing.B) {
	d := New(nil)
	msg := []byte(`"{\"error\":\"SEATS_UNAVAILABLE\",\"unavailable\":[\"F7\",\"F8\"],\"hold_expires\":null}"`)
	args := []byte(`{"customer":"cu_8812","seats":["F7","F8"],"showtime":"st_22719"}`)
	b.ReportAllocs()
	for b.Loop() {
		if d.takenValues(msg, args) == 0 {
			b.Fatal("no seat named")
		}
	}
}
