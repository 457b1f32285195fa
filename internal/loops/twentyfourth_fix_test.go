package loops

import (
	"fmt"
	"testing"
)

// TestReportAgeKeys: how old a report is, under a key that says so and
// names its unit (age_seconds, age_s, ageMinutes), is the time since the
// report was made, counted by the clock while the report stays, as a wait
// is: a position polled whose answer moves only there is the same answer,
// its third poll refused (repeat). A position that moves goes on, and an
// age without a unit of time (a person's, in years) is the answer's.
func TestReportAgeKeys(t *testing.T) {
	poll := func(lat float64, age int) op {
		return call("vessel_position", `{"mmsi":"244660000"}`,
			fmt.Sprintf(`{"lat":%.5f,"lon":4.05031,"nav_status":"At anchor","sog":0.1,"timestamp":"2026-12-06T19:41:30Z","age_seconds":%d}`, lat, age))
	}
	runCases(t, []testCase{
		{"a report whose age alone grows", nil, []op{poll(51.94112, 95), poll(51.94112, 335), refused(poll(51.94112, 575), "repeat")}},
		{"a position that moves as it ages", nil, []op{poll(51.94112, 95), poll(51.95032, 12), poll(51.95952, 14), poll(51.96872, 11)}},
	})
	for _, c := range []struct {
		key  string
		want bool
	}{
		{"age_seconds", true}, {"age_s", true}, {"ageMinutes", true}, {"report_age_sec", true},
		{"age", false}, {"age_years", false}, {"min_age", false}, {"age_days", false},
	} {
		if got := volatileKey([]byte(c.key)); got != c.want {
			t.Errorf("volatileKey(%q) = %v, want %v", c.key, got, c.want)
		}
	}
}

// TestAnswerNamesItsThing: spellings of one argument answered alike, the
// answer naming word for word the value an earlier spelling wrote there,
// that value respelled by another (a station asked as KSFO, ksfo, SFO,
// answered each time with "icaoId": "KSFO"), were resolved by the service
// to that one thing: one more spelling of that argument, the others as
// one spelling wrote them, asks what the answer already said, and is
// refused (rephrase). A batch whose answers name no earlier value (each
// empty, or each echoing its own value), rows that each resolve to one
// thing the answer names but none of which respells another (company
// names mapped to one company), an argument every spelling wrote alike
// and the answer echoes, and a spelling that changes another argument
// too, go on.
func TestAnswerNamesItsThing(t *testing.T) {
	obs := `[{"icaoId":"KSFO","rawOb":"KSFO 061956Z 28014KT 10SM FEW008 BKN200 11/08 A3002","temp":11.1}]`
	metar := func(id string, hours int) op {
		return call("metar", fmt.Sprintf(`{"format":"json","hours":%d,"ids":%q}`, hours, id), obs)
	}
	empty := func(id string) op { return call("metar", fmt.Sprintf(`{"format":"json","ids":%q}`, id), `[]`) }
	echo := func(q string) op {
		return call("search_docs", fmt.Sprintf(`{"q":%q}`, q), fmt.Sprintf(`{"query":%q,"results":[]}`, q))
	}
	bucket := func(b string) op {
		return call("list_objects", fmt.Sprintf(`{"bucket":%q,"region":"us-east-1"}`, b), `{"region":"us-east-1","objects":[],"truncated":false}`)
	}
	company := func(name string) op {
		return call("resolve_company", fmt.Sprintf(`{"name":%q}`, name), `{"cik":"0000123456","company":"Acme Corp","ticker":"ACME"}`)
	}
	runCases(t, []testCase{
		{"a station under other names, the answer naming it", nil, []op{metar("KSFO", 1), metar("ksfo", 1), metar("SFO", 1), refused(metar("San Francisco Intl", 1), "rephrase")}},
		{"stations each answered with nothing", nil, []op{empty("KSFO"), empty("KOAK"), empty("KSJC"), empty("KSMF"), empty("KRDD")}},
		{"searches each echoing their own query", nil, []op{echo("pitch converter"), echo("blade bearing"), echo("yaw drive"), echo("gearbox oil"), echo("tower bolt")}},
		{"rows that resolve to one company", nil, []op{company("Acme Corp"), company("Acme Corporation"), company("ACME Holdings"), company("Acme Co."), company("Acme Industries")}},
		{"buckets in one region the answer names", nil, []op{bucket("logs-2024"), bucket("logs-2025"), bucket("logs-2026"), bucket("backups"), bucket("exports")}},
		{"another name and another window", nil, []op{metar("KSFO", 1), metar("ksfo", 1), metar("SFO", 1), metar("San Francisco Intl", 6)}},
	})
}
