package loops

import "testing"

// A read whose arguments hold a space but no free text asks the question
// foldArgsBound folds (question folds them once, guard20); one with free
// text asks a question of its other values, whatever the tool and the
// free text.
func TestQuestionFoldedOnce(t *testing.T) {
	d := New(nil)
	for _, args := range []string{
		`{"text":"call 5"}`,
		`{"path":"src/a b.go","ref":"main"}`,
		`{"limit":10,"q":"x","when":"last week"}`,
		`{"sql":"select id from orders where id = 1"}`,
	} {
		s := &Step{Tool: "t", Args: []byte(args), Access: "read"}
		q := d.question(s)
		wq, wa := foldArgsBound("t", []byte(args))
		if q != wq || s.asking != wa || s.prose || s.search {
			t.Errorf("%s: question %x asking %x prose %v search %v, want %x %x false false", args, q, s.asking, s.prose, s.search, wq, wa)
		}
	}
	ask := func(tool, args string) (*Step, uint64) {
		s := &Step{Tool: tool, Args: []byte(args), Access: "read"}
		return s, d.question(s)
	}
	s1, q1 := ask("kb", `{"limit":5,"query":"how do I reset my password"}`)
	s2, q2 := ask("docs", `{"limit":5,"query":"password reset steps please"}`)
	_, q3 := ask("kb", `{"limit":6,"query":"how do I reset my password"}`)
	if !s1.prose || !s1.search || !s2.prose || q1 != q2 || q1 == q3 || q1 == 0 {
		t.Errorf("free text: prose %v/%v search %v, questions %x %x %x: want one question for both tools, another for limit 6", s1.prose, s2.prose, s1.search, q1, q2, q3)
	}
	if s1.asking == 0 || s1.asking == q1 {
		t.Errorf("free text: asking %x, question %x", s1.asking, q1)
	}
}

// A bounded map keeps a key put again when its current half is full, and
// moves its half to the older one for a new key.
func TestBoundedPutFull(t *testing.T) {
	var m bounded[int, int]
	m.init(4) // halves of 2
	m.put(1, 1)
	m.put(2, 2)
	m.put(2, 20) // full, known: no rotation
	if len(m.cur) != 2 || m.old != nil || m.cur[2] != 20 {
		t.Fatalf("put of a known key in a full half: cur %v old %v", m.cur, m.old)
	}
	m.put(3, 3) // full, new: rotation
	if len(m.cur) != 1 || len(m.old) != 2 || m.cur[3] != 3 {
		t.Fatalf("put of a new key in a full half: cur %v old %v", m.cur, m.old)
	}
	if v, ok := m.get(1); !ok || v != 1 || len(m.old) != 1 || len(m.cur) != 2 {
		t.Fatalf("get from the older half: %v %v, cur %v old %v", v, ok, m.cur, m.old)
	}
}
