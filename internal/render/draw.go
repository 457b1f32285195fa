package render

import (
	"bytes"
	"fmt"
	"html"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentreach/reach"
)

// statusColor maps a status to fill and stroke colours.
func statusColor(s string) (fill, stroke string) {
	switch s {
	case "completed":
		return "#e8f5e9", "#2e7d32"
	case "failed":
		return "#fff3e0", "#e65100"
	case "refused":
		return "#ffebee", "#c62828"
	case "awaiting_approval":
		return "#fffde7", "#f9a825"
	case "cancelled":
		return "#eceff1", "#546e7a"
	}
	return "#e3f2fd", "#1565c0" // running
}

// layout places nodes as a tidy tree: each leaf takes the next column, a
// parent sits centred over the first row of its children, and a parent
// with more than wrap children (wrap > 0) lays them out in rows of wrap,
// each row below the tallest subtree of the one before, so that a wide
// fan-out stays as wide as the page. Nodes whose parent is unknown are
// roots, and so, in input order, are the nodes no root reaches (their
// parent links run in a cycle). The result is deterministic for a given
// input order.
type placed struct {
	n    *Frame
	x, y float64
}

const (
	boxW, boxH = 200.0, 58.0
	gapX, gapY = 24.0, 46.0
	margin     = 20.0
)

func layout(nodes []Frame, wrap int) ([]placed, map[reach.FrameID]int, float64, float64) {
	index := make(map[reach.FrameID]int, len(nodes))
	for i := range nodes {
		index[nodes[i].ID] = i
	}
	children := make(map[reach.FrameID][]int)
	var roots []int
	for i, n := range nodes {
		if n.Parent == nil {
			roots = append(roots, i)
			continue
		}
		if _, ok := index[*n.Parent]; !ok || *n.Parent == n.ID {
			roots = append(roots, i)
			continue
		}
		children[*n.Parent] = append(children[*n.Parent], i)
	}
	pos := make([]placed, len(nodes))
	cols := make([]float64, len(nodes))
	visited := make([]bool, len(nodes))
	// place puts node i's subtree with its left edge at column col and its
	// top at row, and returns its width in columns and height in rows.
	var place func(i int, col float64, row int) (float64, int)
	place = func(i int, col float64, row int) (float64, int) {
		visited[i] = true
		var kids []int
		for _, c := range children[nodes[i].ID] {
			if !visited[c] {
				kids = append(kids, c)
			}
		}
		width, height := 1.0, 1
		x := col
		if len(kids) > 0 {
			width = 0
			r := row + 1
			for start := 0; start < len(kids); {
				end := len(kids)
				if wrap > 0 {
					end = min(start+wrap, len(kids))
				}
				c, h := col, 0
				var placedKids []int
				for _, k := range kids[start:end] {
					if visited[k] { // placed meanwhile under a sibling
						continue
					}
					w, kh := place(k, c, r)
					placedKids = append(placedKids, k)
					c += w
					h = max(h, kh)
				}
				if start == 0 && len(placedKids) > 0 {
					x = (cols[placedKids[0]] + cols[placedKids[len(placedKids)-1]]) / 2
				}
				width = max(width, c-col)
				r += h
				start = end
			}
			width = max(width, 1)
			height = r - row
		}
		cols[i] = x
		pos[i] = placed{n: &nodes[i], x: margin + x*(boxW+gapX), y: margin + float64(row)*(boxH+gapY)}
		return width, height
	}
	col, rows := 0.0, 0
	for _, r := range roots {
		w, h := place(r, col, 0)
		col += w
		rows = max(rows, h)
	}
	// Parent links that run in a cycle reach no root: draw the first node
	// of each such group as one.
	for i := range nodes {
		if !visited[i] {
			w, h := place(i, col, 0)
			col += w
			rows = max(rows, h)
		}
	}
	width := margin*2 + max(col, 1)*(boxW+gapX) - gapX
	height := margin*2 + float64(max(rows, 1))*(boxH+gapY) - gapY
	return pos, index, width, height
}

// SVGOptions configure SVGWith. Nil means those of SVG.
type SVGOptions struct {
	// Wrap is how many children of one parent are drawn side by side
	// before the next row; if zero, 8; negative: no wrapping.
	Wrap int
	// Link, if set, makes each frame's box a link to Link(id) (the UI
	// folds and unfolds a frame's subtree so). The renderer escapes it.
	Link func(id reach.FrameID) string
	// Caption, if set, is a line drawn above the frames: what of the
	// request itself is not the default (Caption).
	Caption string
}

// captionH is the height the caption line takes above the frames.
const captionH = 20.0

// SVG renders the frames as a standalone SVG document: a tidy tree, boxes
// coloured by status, per-frame tokens and latency, and a dashed red edge
// from each refused call back to the frame it would have re-entered. It
// needs no external program and no network.
func SVG(nodes []Frame) []byte { return SVGWith(nodes, nil) }

// SVGWith renders the frames as SVG does, with the options.
func SVGWith(nodes []Frame, o *SVGOptions) []byte {
	wrap := 8
	var link func(reach.FrameID) string
	caption := ""
	if o != nil {
		if o.Wrap != 0 {
			wrap = o.Wrap
		}
		link, caption = o.Link, o.Caption
	}
	pos, index, w, h := layout(nodes, max(wrap, 0))
	if caption != "" {
		for i := range pos {
			pos[i].y += captionH
		}
		h += captionH
	}
	for _, n := range nodes {
		if _, ok := at(index, n.CycleTo); ok {
			w += 80 // room for the re-entry edges, which bend out to the right
			break
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#c62828"/></marker></defs>` + "\n")
	b.WriteString(`<rect width="100%" height="100%" fill="#ffffff"/>` + "\n")
	if caption != "" {
		fmt.Fprintf(&b, `<text class="caption" x="%.1f" y="%.1f" fill="#37474f">%s</text>`+"\n", margin, margin+4, esc(clip(caption, 80)))
	}
	// Tree edges first, so boxes cover their ends. The children of a
	// parent drawn in one row get a curve each; those wrapped into several
	// rows hang from a comb: a trunk left of them, a rail above each row.
	kids := map[int][]int{}
	for k, p := range pos {
		if i, ok := at(index, p.n.Parent); ok && *p.n.Parent != p.n.ID {
			kids[i] = append(kids[i], k)
		}
	}
	wrapped := func(ks []int) bool {
		for _, k := range ks {
			if pos[k].y != pos[ks[0]].y {
				return true
			}
		}
		return false
	}
	for _, p := range pos {
		if i, ok := at(index, p.n.Parent); ok && *p.n.Parent != p.n.ID && !wrapped(kids[i]) {
			q := pos[i]
			fmt.Fprintf(&b, `<path d="M%.1f,%.1f C%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="none" stroke="#90a4ae" stroke-width="1.5"/>`+"\n",
				q.x+boxW/2, q.y+boxH, q.x+boxW/2, q.y+boxH+gapY/2, p.x+boxW/2, p.y-gapY/2, p.x+boxW/2, p.y)
		}
	}
	for i := range pos {
		q, ks := pos[i], kids[i]
		if !wrapped(ks) {
			continue
		}
		rows := map[float64][]int{}
		left := pos[ks[0]].x
		for _, k := range ks {
			rows[pos[k].y] = append(rows[pos[k].y], k)
			left = min(left, pos[k].x)
		}
		trunk := left - gapX/2
		ys := slices.Sorted(maps.Keys(rows))
		first, last := ys[0]-gapY/2, ys[len(ys)-1]-gapY/2
		var d strings.Builder
		fmt.Fprintf(&d, "M%.1f,%.1f V%.1f H%.1f V%.1f", q.x+boxW/2, q.y+boxH, first, trunk, last)
		for _, y := range ys {
			right := trunk
			for _, k := range rows[y] {
				right = max(right, pos[k].x+boxW/2)
				fmt.Fprintf(&d, " M%.1f,%.1f V%.1f", pos[k].x+boxW/2, y-gapY/2, y)
			}
			fmt.Fprintf(&d, " M%.1f,%.1f H%.1f", trunk, y-gapY/2, right)
		}
		fmt.Fprintf(&b, `<path class="comb" d="%s" fill="none" stroke="#90a4ae" stroke-width="1.5"/>`+"\n", d.String())
	}
	for _, p := range pos {
		fill, stroke := statusColor(p.n.Status)
		dash := ""
		if p.n.Kind == "model" {
			dash = ` stroke-dasharray="4 2"`
		}
		rx := 6
		if p.n.Kind == "delegate" {
			rx = 18
		}
		if link != nil {
			fmt.Fprintf(&b, `<a href="%s">`, esc(link(p.n.ID)))
		}
		fmt.Fprintf(&b, `<g class="frame %s %s" id="f-%s">`, esc(p.n.Kind), esc(p.n.Status), p.n.ID)
		fmt.Fprintf(&b, `<title>%s</title>`, esc(tooltip(p.n)))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.0f" height="%.0f" rx="%d" fill="%s" stroke="%s" stroke-width="1.5"%s/>`,
			p.x, p.y, boxW, boxH, rx, fill, stroke, dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-weight="bold">%s</text>`, p.x+8, p.y+17, esc(clip(kindMark(p.n.Kind)+" "+p.n.Name, 28)))
		if args := p.n.ArgumentsText(); args != "" {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#37474f">%s</text>`, p.x+8, p.y+33, esc(clip(args, 30)))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s">%s</text>`, p.x+8, p.y+49, stroke, esc(clip(statusLine(p.n), 32)))
		if p.n.Folded > 0 {
			fmt.Fprintf(&b, `<text class="folded" x="%.1f" y="%.1f" text-anchor="end" fill="#37474f">+%d</text>`, p.x+boxW-6, p.y+17, p.n.Folded)
		}
		b.WriteString("</g>")
		if link != nil {
			b.WriteString("</a>")
		}
		b.WriteString("\n")
	}
	// Refused calls: an edge back to the ancestor they would have re-entered.
	for _, p := range pos {
		i, ok := at(index, p.n.CycleTo)
		if !ok {
			continue
		}
		q := pos[i]
		x1, y1 := p.x+boxW, p.y+boxH/2
		x2, y2 := q.x+boxW, q.y+boxH/2
		bend := min(60+(y1-y2)/8, 75)
		fmt.Fprintf(&b, `<path class="cycle" d="M%.1f,%.1f C%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="none" stroke="#c62828" stroke-width="2" stroke-dasharray="6 4" marker-end="url(#arrow)"/>`+"\n",
			x1, y1, x1+bend, y1, x2+bend, y2, x2, y2)
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// DOT renders the frames for Graphviz: the same colours, and dashed red
// edges for refused re-entries.
func DOT(nodes []Frame) []byte { return DOTWith(nodes, "") }

// DOTWith renders the frames as DOT does, with caption (if not "") as the
// graph's label, above its frames.
func DOTWith(nodes []Frame, caption string) []byte {
	var b bytes.Buffer
	b.WriteString("digraph reach {\n  rankdir=TB;\n")
	if caption != "" {
		fmt.Fprintf(&b, "  labelloc=t;\n  label=%s;\n", dotString(caption))
	}
	b.WriteString("  node [shape=box, style=\"rounded,filled\", fontname=\"sans-serif\", fontsize=10];\n")
	ids := map[reach.FrameID]bool{}
	for _, n := range nodes {
		ids[n.ID] = true
	}
	for _, n := range nodes {
		fill, stroke := statusColor(n.Status)
		label := kindMark(n.Kind) + " " + n.Name
		if args := n.ArgumentsText(); args != "" {
			label += "\n" + clip(args, 40)
		}
		label += "\n" + statusLine(&n)
		fmt.Fprintf(&b, "  %s [label=%s, fillcolor=%q, color=%q];\n", dotID(n.ID), dotString(label), fill, stroke)
	}
	for _, n := range nodes {
		if n.Parent != nil && ids[*n.Parent] {
			fmt.Fprintf(&b, "  %s -> %s;\n", dotID(*n.Parent), dotID(n.ID))
		}
	}
	for _, n := range nodes {
		if n.CycleTo != nil && ids[*n.CycleTo] {
			fmt.Fprintf(&b, "  %s -> %s [style=dashed, color=\"#c62828\", constraint=false, label=\"re-entry refused\"];\n", dotID(n.ID), dotID(*n.CycleTo))
		}
	}
	b.WriteString("}\n")
	return b.Bytes()
}

func kindMark(k string) string {
	switch k {
	case "model":
		return "◆"
	case "delegate":
		return "⇢"
	}
	return "▸"
}

// at returns the index of frame id, if it is drawn.
func at(index map[reach.FrameID]int, id *reach.FrameID) (int, bool) {
	if id == nil {
		return 0, false
	}
	i, ok := index[*id]
	return i, ok
}

func statusLine(n *Frame) string {
	parts := []string{n.Status}
	if n.Tokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tok", n.Tokens))
	}
	if l := threeDigits(n.Latency()); l > 0 {
		parts = append(parts, l.String())
	}
	return strings.Join(parts, " · ")
}

// threeDigits rounds d to its three leading digits, as a box has room for
// and a reader takes in: 22.6s, 12.3ms, 388µs, 3m5s.
func threeDigits(d time.Duration) time.Duration {
	p := time.Duration(1)
	for d/p >= 1000 {
		p *= 10
	}
	return d.Round(p)
}

func tooltip(n *Frame) string {
	s := n.Kind + " " + n.Name
	if args := n.ArgumentsText(); args != "" {
		s += " " + args
	}
	s += "\n" + statusLine(n)
	if e := n.ErrorText(); e != "" {
		s += "\n" + e
	}
	if n.Folded > 0 {
		s += fmt.Sprintf("\n%d frames folded under it", n.Folded)
	}
	return s
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// esc escapes s for SVG text and attributes: markup as entities, a
// carriage return as &#13; (a parser would read a raw one as a newline),
// and what [scrub] replaces as U+FFFD, so that the document is well-formed
// XML whatever a name holds.
func esc(s string) string {
	return strings.ReplaceAll(html.EscapeString(scrub(s)), "\r", "&#13;")
}

// scrub replaces with U+FFFD what a document must not hold: a byte that is
// not UTF-8, a control character but tab, newline and carriage return
// (C0 ones are not allowed in XML; DEL and C1 ones are discouraged, and
// terminals act on them), and U+FFFE and U+FFFF (not allowed in XML).
func scrub(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, unwanted) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s { // a byte that is not UTF-8 comes as U+FFFD
		if unwanted(r) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	return b.String()
}

func unwanted(r rune) bool {
	return r < 0x20 && r != '\t' && r != '\n' && r != '\r' || 0x7f <= r && r <= 0x9f || r == 0xfffe || r == 0xffff
}

// dotID names a frame's node: "f" and its id, as a DOT string.
func dotID(id reach.FrameID) string { return dotString("f" + id.String()) }

// dotString quotes s as a DOT string: a line break (\n, \r\n or \r) as
// DOT's \n, and what [scrub] replaces as U+FFFD.
func dotString(s string) string {
	return `"` + dotEscaper.Replace(scrub(s)) + `"`
}

var dotEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\r\n", `\n`, "\r", `\n`, "\n", `\n`)

// Fold returns nodes without the frames under the folded ones; each folded
// frame counts what it hides in Folded. A frame under two folded ones is
// counted by the outermost.
func Fold(nodes []Frame, folded map[reach.FrameID]bool) []Frame {
	if len(folded) == 0 {
		return nodes
	}
	parent := make(map[reach.FrameID]reach.FrameID, len(nodes))
	for _, n := range nodes {
		if n.Parent != nil {
			parent[n.ID] = *n.Parent
		}
	}
	// hiddenBy is the outermost folded ancestor of id, or 0.
	hiddenBy := func(id reach.FrameID) reach.FrameID {
		var by reach.FrameID
		seen := map[reach.FrameID]bool{id: true}
		for p, ok := parent[id]; ok && !seen[p]; p, ok = parent[p] {
			seen[p] = true
			if folded[p] {
				by = p
			}
		}
		return by
	}
	counts := map[reach.FrameID]int{}
	out := make([]Frame, 0, len(nodes))
	for _, n := range nodes {
		if by := hiddenBy(n.ID); by != 0 {
			counts[by]++
			continue
		}
		out = append(out, n)
	}
	for i := range out {
		out[i].Folded = counts[out[i].ID]
	}
	return out
}
