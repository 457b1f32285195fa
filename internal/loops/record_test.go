package loops

import (
	"fmt"
	"testing"
)

// TestOneRecordFound: a fuzzy search that finds the same one record,
// named by its identifier, for a name spelt other ways is one finding:
// the fourth spelling is refused as rewordings that find the same
// records are. Spellings that find other records, and a one-line answer
// without an identifier, go on.
func TestOneRecordFound(t *testing.T) {
	contact := func(id int, first, last string) string {
		return fmt.Sprintf(`{"paging":null,"results":[{"archived":false,"id":"%d","properties":{"company":"%s Design","email":"%s@%s.example","firstname":"%s","lastname":"%s","stage":"subscriber"}}],"total":1}`, id, last, first, last, first, last)
	}
	qs := []string{"Jon Smyth", "John Smyth", "Jonathan Smythe", "J. Smyth", "Smyth, Jon"}
	var same, other, plain []op
	for i, q := range qs {
		args := fmt.Sprintf(`{"limit":10,"query":%q}`, q)
		same = append(same, call("search_contacts", args, contact(8817, "Joanna", "Smythe")))
		other = append(other, call("search_contacts", args, contact(8817+i, []string{"Joanna", "Jon", "John", "Jonathan", "Jo"}[i], "Smythe")))
		plain = append(plain, call("search_notes", args, `{"company":"Smythe Design","email":"joanna@smythe.example","first":"Joanna","last":"Smythe","stage":"subscriber"}`))
	}
	same[3] = refused(same[3], "rephrase")
	runCases(t, []testCase{
		{"the same contact each time", nil, same[:4]},
		{"other contacts", nil, other},
		{"one record without an identifier", nil, plain},
	})
}
