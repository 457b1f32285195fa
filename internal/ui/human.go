package ui

import (
	"fmt"
	"math"
	"net/url"
	"time"
)

// when is a moment as people read it: "3 min ago", "in 14 min", with the
// exact time (UTC) for a tooltip and the machine-readable one for the
// script that keeps the relative text fresh.
type when struct {
	Rel, Abs, ISO string
}

func newWhen(t, now time.Time) when {
	if t.IsZero() {
		return when{}
	}
	return when{Rel: relative(t, now), Abs: t.UTC().Format("2006-01-02 15:04:05 UTC"), ISO: t.UTC().Format(time.RFC3339Nano)}
}

// relative says how far t is from now: "just now", "40 s ago", "3 min ago",
// "2 h ago", "in 14 min", and past two days the date.
func relative(t, now time.Time) string {
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < 5*time.Second:
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%d h", int(d.Hours()))
	default:
		if t.Year() == now.Year() {
			return t.UTC().Format("Jan 2 15:04")
		}
		return t.UTC().Format("2006-01-02")
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// span says how long d is as people read it: "850 ms", "4.2 s",
// "3 min 4 s", "10 min", "2 h 5 min", "1 h"; "" for none.
func span(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d < time.Millisecond:
		return fmt.Sprintf("%d µs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Hour:
		return units(int(d.Minutes()), "min", int(d.Seconds())%60, "s")
	}
	return units(int(d.Hours()), "h", int(d.Minutes())%60, "min")
}

// units is "n a m b", or "n a" when m is 0.
func units(n int, a string, m int, b string) string {
	if m == 0 {
		return fmt.Sprintf("%d %s", n, a)
	}
	return fmt.Sprintf("%d %s %d %s", n, a, m, b)
}

// money shows a cost in the price table's currency (dollars in the
// examples): four decimals under a dollar, else two.
func money(c float64) string {
	switch {
	case c <= 0 || math.IsNaN(c):
		return ""
	case c < 1:
		return fmt.Sprintf("$%.4f", c)
	}
	return fmt.Sprintf("$%.2f", c)
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
