package loops

import (
	"fmt"
	"testing"
)

// TestAttemptOwnIDs: a failure counted only word for word (a type the
// streak does not know) names the attempt as well as the thing: the
// attempt's, the submission's or the job's id, one the call did not
// name, and how long it ran are each attempt's own and left out, so
// that one payment tried under spellings of its invoice, failing on the
// same missing route, is refused at its fourth try (twenty-sixth probe).
// A job asked for by its id is the thing: other jobs, each failed alike,
// are a batch.
func TestAttemptOwnIDs(t *testing.T) {
	msg := func(i int) []byte {
		return Text(fmt.Sprintf(`{"payment_hash":"4f1e7c2a9b3d","attempt_id":%d,"status":"FAILED","failure_reason":"FAILURE_REASON_NO_ROUTE","wall_time_s":%d}`, 7710+i*3, 14+i))
	}
	if a, b := sameThing(msg(0), []byte(`{"payment_request":"lnbc1"}`)), sameThing(msg(1), []byte(`{"payment_request":"LNBC1"}`)); a == 0 || a != b {
		t.Fatalf("one complaint under two attempt ids: %x, %x", a, b)
	}
	text := func(i int) []byte {
		return Text(fmt.Sprintf("printer P4 is stopped (media-empty-error); job %d not created", 4411+i))
	}
	if a, b := sameThing(text(0), []byte(`{"printer":"P4"}`)), sameThing(text(1), []byte(`{"printer":"p4"}`)); a == 0 || a != b {
		t.Fatalf("one complaint under two new jobs: %x, %x", a, b)
	}
	// Jobs the calls name are the things complained of.
	if a, b := sameThing(text(0), []byte(`{"job":4411}`)), sameThing(text(1), []byte(`{"job":4412}`)); a == b {
		t.Fatal("two jobs asked for by their ids are one complaint")
	}
	// A number under a key that names no attempt stays.
	other := func(i int) []byte { return Text(fmt.Sprintf(`{"status":"FAILED","node":"n1","order_id":%d}`, 7710+i)) }
	if sameThing(other(0), nil) == sameThing(other(1), nil) {
		t.Fatal("two orders are one complaint")
	}

	d := New(nil)
	for i, inv := range []string{"lnbc25u1", "lightning:lnbc25u1", "LNBC25U1", " lnbc25u1 "} {
		s := &Step{Tool: "pay_invoice", Access: "write", Args: []byte(`{"invoice":"` + inv + `"}`)}
		v := d.Check(s)
		if (v != nil) != (i == 3) {
			t.Fatalf("try %d: %v", i, v)
		}
		if v != nil {
			break
		}
		d.Done(s, Outcome{Error: true, ErrorType: "payment_failed", Result: msg(i)})
	}
}

// TestWallTimeKey: how long a call ran by the wall clock is measured anew
// each run (metadata); a wall's height is not.
func TestWallTimeKey(t *testing.T) {
	for k, want := range map[string]bool{
		"wall_time_s": true, "wallClockMs": true, "walltime": true, "wall_time": true,
		"wall_height": false, "wall": false, "timeout_s": false,
	} {
		if got := volatileKey([]byte(k)); got != want {
			t.Errorf("volatileKey(%q) = %v, want %v", k, got, want)
		}
	}
}

// TestRPCOneErrorAnswer: an answer in JSON-RPC 1.0's shape, a result of
// null beside an error, is a failure handed on as an answer (a desktop
// app's local API refusing a duplicate note), its error the complaint; a
// note added answers its id with an error of null, and an answer with
// other members is the answer's.
func TestRPCOneErrorAnswer(t *testing.T) {
	for in, want := range map[string]string{
		`{"result":null,"error":"cannot create note because it is a duplicate"}`: `{"message":"cannot create note because it is a duplicate"}`,
		`{"id":7,"result":null,"error":{"message":"deck not found","code":3}}`:   `{"message":"deck not found"}`,
		`{"result":1796620000000,"error":null}`:                                  ``,
		`{"result":null,"error":null}`:                                           ``,
		`{"result":null,"error":"","id":1}`:                                      ``,
		`{"result":null,"error":"not yet","status":"pending"}`:                   ``,
	} {
		c, _ := rpcErrorAnswer([]byte(in))
		if string(c) != want {
			t.Errorf("rpcErrorAnswer(%s) = %s, want %s", in, c, want)
		}
	}
	if _, tr := rpcErrorAnswer([]byte(`{"result":null,"error":"server overloaded, try again"}`)); !tr {
		t.Error("an overloaded server's answer is not transient")
	}

	// The fourth note added again under reworded backs is refused.
	d := New(nil)
	for i := range 4 {
		s := &Step{Tool: "add_note", Access: "write", Args: []byte(fmt.Sprintf(`{"front":"Mitochondrion","back":"reworded %c"}`, 'a'+i))}
		v := d.Check(s)
		if (v != nil) != (i == 3) {
			t.Fatalf("try %d: %v", i, v)
		}
		if v != nil {
			break
		}
		d.Done(s, Outcome{Result: []byte(`{"error":"cannot create note because it is a duplicate","result":null}`)})
	}
}

// TestKindBeforeID: an id after a word that says what kind of thing it is
// or whose (sensor 131075, PA-131075, purpleair:131075) names what the id
// alone names, asked again and answered alike: the fourth asking is
// refused. Short numbers (row 12), a word of one letter (A-1012: a row's
// seat) and ids of letters too stay as written. A stamp's key written in
// two words (data_time_stamp) is a timestamp's.
func TestKindBeforeID(t *testing.T) {
	for v, want := range map[string]int{
		"sensor 131075": 7, "PA-131075": 3, "purpleair:131075": 10, "STOP_1234": 5, "case #88120": 0,
		"row 12": 0, "A-1012": 0, "131075": 0, "ENG-1841a": 0, "sensor  131075": 0, "verylongprefix-1234": 0,
	} {
		if got := kindBeforeID([]byte(v)); got != want {
			t.Errorf("kindBeforeID(%q) = %d, want %d", v, got, want)
		}
	}
	for k, want := range map[string]bool{"data_time_stamp": true, "timeStamp": true, "stamp": false, "stamp_duty": false} {
		if got := volatileKey([]byte(k)); got != want {
			t.Errorf("volatileKey(%q) = %v, want %v", k, got, want)
		}
	}

	d := New(nil)
	for i, id := range []string{`131075`, `"131075"`, `"PA-131075"`, `"purpleair:131075"`} {
		s := &Step{Tool: "sensor_get", Access: "read", Args: []byte(`{"sensor":` + id + `}`)}
		v := d.Check(s)
		if (v != nil) != (i == 3) {
			t.Fatalf("asking %d: %v", i, v)
		}
		if v != nil {
			break
		}
		d.Done(s, Outcome{Result: []byte(fmt.Sprintf(`{"data_time_stamp":%d,"sensor":{"index":131075,"online":false,"last_seen":"2026-12-07T03:12:40Z"}}`, 1796623200+i*37))})
	}
}
