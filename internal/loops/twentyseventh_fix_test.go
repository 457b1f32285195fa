package loops

import (
	"fmt"
	"strings"
	"testing"
)

// TestReadingStamps: a key that says when a reading was taken
// (sampled_at, measured_at, observed_at, obs_time) is a stamp of the
// answer, as fetched_at is: a fermenter polled whose gravity stays, each
// sample taken anew, is the same answer, and its third poll is refused
// (twenty-seventh probe). When something was updated or reported stays
// the answer's: a thing changed, a report made.
func TestReadingStamps(t *testing.T) {
	for _, k := range []string{"sampled_at", "measuredAt", "observed_at", "obs_time", "observation_time", "sampled_on"} {
		if !volatileKey([]byte(k)) {
			t.Errorf("%s: not a stamp", k)
		}
	}
	for _, k := range []string{"updated_at", "reported_at", "sampled", "measurement", "observations", "obs", "sample_count"} {
		if volatileKey([]byte(k)) {
			t.Errorf("%s: a stamp", k)
		}
	}
	d := New(nil)
	reading := func(i int, sg string) []byte {
		return fmt.Appendf(nil, `{"tank":"FV-3","specific_gravity":%s,"temperature_c":19.5,"sampled_at":"2026-12-07T07:%02d:00Z"}`, sg, 10+i*15)
	}
	for i := range 2 {
		s := &Step{Tool: "fermenter_reading", Args: []byte(`{"tank":"FV-3"}`), Access: "read"}
		if v := d.Check(s); v != nil {
			t.Fatalf("poll %d refused: %s", i+1, v.Message)
		}
		d.Done(s, Outcome{Result: reading(i, "1.018")})
	}
	if v := d.Check(&Step{Tool: "fermenter_reading", Args: []byte(`{"tank":"FV-3"}`), Access: "read"}); v == nil || v.Detector != "repeat" {
		t.Fatalf("a third poll of one gravity, sampled anew: %v", v)
	}
	// The gravity falling is news each time.
	d = New(nil)
	for i, sg := range []string{"1.031", "1.022", "1.014", "1.011"} {
		s := &Step{Tool: "fermenter_reading", Args: []byte(`{"tank":"FV-3"}`), Access: "read"}
		if v := d.Check(s); v != nil {
			t.Fatalf("poll %d of a falling gravity refused: %s", i+1, v.Message)
		}
		d.Done(s, Outcome{Result: reading(i, sg)})
	}
}

// TestQuoteIDs: the id of a quote or an estimate, made anew for each
// asking (quote_id, estimateId), is the exchange's, as a search's id is:
// one rate quoted under notations of its amount is the same answer each
// time (twenty-seventh probe). What it quotes stays.
func TestQuoteIDs(t *testing.T) {
	for _, k := range []string{"quote_id", "quoteId", "estimate_id", "estimateUUID"} {
		if !volatileKey([]byte(k)) {
			t.Errorf("%s: not the exchange's", k)
		}
	}
	for _, k := range []string{"quote", "quotes", "order_id", "offer_id", "estimate", "quoted_rate"} {
		if volatileKey([]byte(k)) {
			t.Errorf("%s: the exchange's", k)
		}
	}
	q := func(id string, rate float64) []byte {
		return fmt.Appendf(nil, `{"quote_id":"%s","rate":%g,"apr":6.512}`, id, rate)
	}
	a := scanLeaves(q("7b6d3c230a4772df", 6.375), nil, 64, true)
	b := scanLeaves(q("7b6e0a0a0a478ad2", 6.375), nil, 64, true)
	c := scanLeaves(q("7b6e0a0a0a478ad2", 6.625), nil, 64, true)
	if a.digest != b.digest {
		t.Fatal("one rate under two quote ids: two answers")
	}
	if b.digest == c.digest {
		t.Fatal("two rates: one answer")
	}
}

// TestOwnOperationIDs: an operation's, a deployment's or an execution's
// id in a failure, one the call did not name (operationId, "deployment":
// "dep_8802"), is what the attempt made of its own, as a job's id is: a
// firmware deployed under spellings of its version into one bad signature
// is one complaint (twenty-seventh probe). A deployment the call names is
// the thing complained of.
func TestOwnOperationIDs(t *testing.T) {
	msg := func(key string, i int) []byte {
		return Text(fmt.Sprintf(`{"code":"SIGNATURE_INVALID","message":"image thermo-2.4.1.bin: signature does not verify against key fw-2025","%s":"dep_%d"}`, key, 8801+i))
	}
	for _, key := range []string{"deployment", "operationId", "operation_id", "execution_id", "deployment_ref"} {
		a, b := sameThing(msg(key, 0), []byte(`{"version":"2.4.1"}`)), sameThing(msg(key, 1), []byte(`{"version":"v2.4.1"}`))
		if a == 0 || a != b {
			t.Errorf("%s: one complaint under two attempts' ids: %x, %x", key, a, b)
		}
	}
	// Deployments the calls name are the things complained of.
	if a, b := sameThing(msg("deployment", 0), []byte(`{"deployment":"dep_8801"}`)), sameThing(msg("deployment", 1), []byte(`{"deployment":"dep_8802"}`)); a == b {
		t.Fatal("two deployments asked for by their ids are one complaint")
	}
	// Under a key that names no attempt, the id stays.
	if sameThing(msg("device", 0), nil) == sameThing(msg("device", 1), nil) {
		t.Fatal("two devices are one complaint")
	}

	d := New(nil)
	for i, v := range []string{"2.4.1", "v2.4.1", "V2.4.1"} {
		s := &Step{Tool: "firmware_deploy", Args: fmt.Appendf(nil, `{"group":"thermostats-eu","version":%q}`, v), Access: "write"}
		if v := d.Check(s); v != nil {
			t.Fatalf("deploy %d refused: %s", i+1, v.Message)
		}
		d.Done(s, Outcome{Error: true, ErrorType: "rejected", Result: msg("deployment", i)})
	}
	if v := d.Check(&Step{Tool: "firmware_deploy", Args: []byte(`{"group":"thermostats-eu","version":"2.4.1 "}`), Access: "write"}); v == nil || v.Detector != "same_error" {
		t.Fatalf("a fourth deploy into one bad signature: %v", v)
	}
}

// TestConflictNamesTaken: a conflict that names what the call asked for
// (the seats, the slot, the name taken) is about that: other seats asked
// and refused alike are a search for a free one, and the fourth is not
// refused; the same seats asked in other spellings and orders are named
// alike, and the fourth asking is (twenty-seventh probe). A conflict that
// names none of the call's values stays one complaint.
func TestConflictNamesTaken(t *testing.T) {
	book := func(d *Detector, seats string, taken string) *Verdict {
		s := &Step{Tool: "seats_book", Args: []byte(`{"showtime":"st_22719","seats":` + seats + `}`), Access: "write"}
		if v := d.Check(s); v != nil {
			return v
		}
		d.Done(s, Outcome{Error: true, ErrorType: "conflict", Result: Text(`{"error":"SEATS_UNAVAILABLE","unavailable":` + taken + `}`)})
		return nil
	}
	d := New(nil)
	for _, p := range [][2]string{{`["F7","F8"]`, `["F7","F8"]`}, {`["G7","G8"]`, `["G7","G8"]`}, {`["E9","E10"]`, `["E9","E10"]`}, {`["H3","H4"]`, `["H3","H4"]`}} {
		if v := book(d, p[0], p[1]); v != nil {
			t.Fatalf("other seats %s refused: %s", p[0], v.Message)
		}
	}
	d = New(nil)
	var v *Verdict
	for _, seats := range []string{`["F7","F8"]`, `["F8","F7"]`, `["f7","f8"]`, `["F-7","F-8 "]`} {
		if v = book(d, seats, `["F7","F8"]`); v != nil {
			break
		}
	}
	if v == nil || v.Detector != "same_error" {
		t.Fatalf("the same seats respelled, a fourth time: %v", v)
	}
	// Named by letters and digits, case folded.
	if a, b := d.takenValues([]byte(`seats ["F7","F8"] taken`), []byte(`{"seats":["f-7"," F8"]}`)), d.takenValues([]byte(`seats ["F7","F8"] taken`), []byte(`{"seats":["F8","F7"]}`)); a == 0 || a != b {
		t.Fatalf("one pair of seats in two spellings: %x, %x", a, b)
	}
	// A seat of a row named with its punctuation is that seat, not its row.
	if d.takenValues([]byte(`["R2-7","R2-8"] unavailable`), []byte(`{"seats":["R2-7"]}`)) == 0 ||
		d.takenValues([]byte(`["R2-7","R2-8"] unavailable`), []byte(`{"seats":["R2"]}`)) != 0 {
		t.Fatal("R2-7 named as R2")
	}
	// A conflict that names no value of the call.
	if d.takenValues([]byte(`tank FV-3 holds batch B-2611`), []byte(`{"batch":"B-2614","temp":"18C"}`)) != 0 {
		t.Fatal("a value the conflict does not name")
	}
}

// FuzzTakenValues: what a conflict names of the call never panics, names
// a value the same whatever its case and punctuation (- and _), and
// names nothing in a message that holds none of the call's letters and
// digits.
func FuzzTakenValues(f *testing.F) {
	f.Add([]byte(`["F7","F8"] unavailable`), "F-7")
	f.Add([]byte(`tank FV-3 holds batch B-2611`), "fv_3")
	f.Add([]byte("\xff-\x80_"), "\x80")
	f.Fuzz(func(t *testing.T, msg []byte, v string) {
		d := New(nil)
		args := fmt.Appendf(nil, `{"v":%q}`, v)
		a := d.takenValues(msg, args)
		up := fmt.Appendf(nil, `{"v":%q}`, strings.ToUpper(v))
		if b := d.takenValues(msg, up); isASCII(v) && a != b {
			t.Fatalf("%q and its upper case named otherwise: %x, %x", v, a, b)
		}
		if d.takenValues(nil, args) != 0 {
			t.Fatal("an empty message names a value")
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
