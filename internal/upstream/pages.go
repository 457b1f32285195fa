package upstream

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentreach/reach/internal/mcpwire"
)

// An upstream may list its tools, resources, resource templates and
// prompts in pages, each with the cursor of the next (nextCursor). reach
// follows the cursor, bounded: a listing is bounded as one answer is
// (mcpwire.MaxAnswer bytes, maxListed items), and its pages too, since a
// page may bring nothing: an upstream whose cursor comes back, or never
// ends, had reach ask it again until the listing's timeout.

// maxPages bounds the pages of one listing: one item a page, up to the
// items a listing may have. maxEmptyPages bounds its pages with nothing on
// them. Variables for tests.
var (
	maxPages      = maxListed + 1
	maxEmptyPages = 16
)

// maxListed bounds the tools of one upstream's listing.
const maxListed = 10000

// errPaging is the error of a listing whose pages break a bound.
type errPaging struct{ why string }

func (e *errPaging) Error() string { return "the upstream's listing " + e.why }

// paged follows a listing through its pages: page lists the page at cursor
// and returns how many items it had and the next cursor ("" at the last
// page). It fails at page's first error, or an *errPaging when a cursor
// comes back (the listing would go round for ever), past maxPages pages or
// maxEmptyPages pages with nothing on them, or when the cursors together
// pass mcpwire.MaxAnswer bytes (each is sent back).
func paged(page func(cursor string) (n int, next string, err error)) error {
	seen := map[[sha256.Size]byte]bool{}
	var cursor string
	var empty int
	var size int64
	for pages := 1; ; pages++ {
		n, next, err := page(cursor)
		if err != nil || next == "" {
			return err
		}
		h := sha256.Sum256([]byte(next))
		switch {
		case seen[h]:
			return &errPaging{fmt.Sprintf("gives on page %d a cursor it gave before: it would go round for ever", pages)}
		case pages >= maxPages:
			return &errPaging{fmt.Sprintf("has more than %d pages", maxPages)}
		case n == 0 && empty >= maxEmptyPages:
			return &errPaging{fmt.Sprintf("has more than %d pages with nothing on them", maxEmptyPages)}
		}
		if n == 0 {
			empty++
		}
		if size += int64(len(next)); size > mcpwire.MaxAnswer {
			return &errPaging{fmt.Sprintf("has cursors of more than %d bytes together", mcpwire.MaxAnswer)}
		}
		seen[h] = true
		cursor = next
	}
}

// errTooMany is the error of a mirrored listing past maxMirrored items.
var errTooMany = errors.New("too many")

// mirrorList lists what is mirrored of an upstream (its resources, resource
// templates or prompts: what) through its pages, at most maxMirrored items
// of mcpwire.MaxAnswer bytes together. It returns false, logged, when the
// listing breaks a bound: the mirror then keeps what it had, as it does
// when the upstream fails to list.
func mirrorList[T any](u *upstream, what string, page func(cursor string) ([]*T, string, error)) ([]*T, bool) {
	var all []*T
	var size int64
	err := paged(func(cursor string) (int, string, error) {
		items, next, err := page(cursor)
		if err != nil {
			return 0, "", err
		}
		// A null in the list (an item the upstream wrote as null) is no
		// item: kept, it crashed the gateway where the list is read.
		items = slices.DeleteFunc(items, func(it *T) bool { return it == nil })
		all = append(all, items...)
		if len(all) > maxMirrored {
			return 0, "", errTooMany
		}
		b, err := json.Marshal(items)
		if err != nil {
			return 0, "", err
		}
		if size += int64(len(b)); size > mcpwire.MaxAnswer {
			return 0, "", &errPaging{fmt.Sprintf("of %s is larger than %d bytes (of JSON) together", what, mcpwire.MaxAnswer)}
		}
		return len(items), next, nil
	})
	if errors.Is(err, errTooMany) {
		u.fewEnough(what, len(all)) // logs it
		return nil, false
	}
	if _, ok := errors.AsType[*errPaging](err); ok {
		u.log.Warn(fmt.Sprintf("the upstream's listing of %s breaks a bound; reach keeps those it had", what), "err", err)
	}
	return all, err == nil
}
