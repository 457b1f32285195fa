package loops

import (
	"fmt"
	"testing"
)

// TestEchoOnlyAnswer: a read asked again with only its counters moved (a
// thought numbered anew, its text the same) or only an address's query or
// trailing slash changed, answered as the last one but for what it echoes
// of its own arguments, is the same call made again: the fourth is
// refused. Other thoughts under moving counters, a batch of numbers
// alone, ids under one text, pages of one address with other contents,
// other pages answering one template, and the same call after a write go
// on.
func TestEchoOnlyAnswer(t *testing.T) {
	think := func(thought string, i int) op {
		return call("sequentialthinking", fmt.Sprintf(`{"nextThoughtNeeded":true,"thought":%q,"thoughtNumber":%d,"totalThoughts":%d}`, thought, i, 5+i),
			fmt.Sprintf(`{"branches":[],"nextThoughtNeeded":true,"thoughtHistoryLength":%d,"thoughtNumber":%d,"totalThoughts":%d}`, i, i, 5+i))
	}
	fetch := func(url, body string) op {
		return call("fetch", `{"max_length":5000,"url":"`+url+`"}`, marshalString("Contents of "+url+":\n"+body))
	}
	page := "# Trail shoe Alto\n\nPrice: EUR 89.95\n\nIn stock: 0"
	var thoughts, others, seats, tickets, pages, template, written []op
	for i := 1; i <= 5; i++ {
		thoughts = append(thoughts, think("I should check whether the pool saturates.", i))
		others = append(others, think(fmt.Sprintf("Step %c: look at the pool's %d-th minute.", 'a'+i, i*7), i))
		seats = append(seats, call("check_seat", fmt.Sprintf(`{"flight":"LH123","seat":%d}`, i), fmt.Sprintf(`{"available":false,"seat":%d}`, i)))
		tickets = append(tickets, call("classify", fmt.Sprintf(`{"text":"refund not received yet","ticket_id":%d}`, 300+i), fmt.Sprintf(`{"label":"billing","ticket_id":%d}`, 300+i)))
		pages = append(pages, fetch(fmt.Sprintf("https://shop.example.com/c/shoes?page=%d", i), fmt.Sprintf("# Shoes, page %d\n\n- %s\n- %s", i, []string{"Alto", "Brisa", "Cumbre", "Duna", "Eco"}[i-1], []string{"Faro", "Gris", "Hielo", "Isla", "Jara"}[i-1])))
		template = append(template, fetch(fmt.Sprintf("https://shop.example.com/p/%d", 40211+i*17), "# Trail shoe\n\nOut of stock."))
		written = append(written, fetch(fmt.Sprintf("https://shop.example.com/p/40211?utm_source=n%d", i), page),
			write("save_note", fmt.Sprintf(`{"note_id":"n%d","text":"checked"}`, i), `{"ok":true}`))
	}
	runCases(t, []testCase{
		{"one thought, its counters moving", nil, []op{thoughts[0], thoughts[1], thoughts[2], refused(thoughts[3], "repeat")}},
		{"one page under tracking parameters", nil, []op{
			fetch("https://shop.example.com/p/40211", page),
			fetch("https://shop.example.com/p/40211?utm_source=newsletter", page),
			fetch("https://shop.example.com/p/40211?ref=home", page),
			refused(fetch("https://shop.example.com/p/40211/", page), "repeat"),
		}},
		{"other thoughts, counters moving", nil, others},
		{"a batch of numbers alone", nil, seats},
		{"ids under one text", nil, tickets},
		{"pages of one address, other contents", nil, pages},
		{"other pages answering one template", nil, template},
		{"one page again after each write", nil, written},
	})
}
