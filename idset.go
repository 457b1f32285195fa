package reach

import "slices"

// idSet is a set of frame ids kept in 8 bytes an id: the ids of the frames
// a request let go (Options.StoredFrames), one added for every ended call
// of a long session. A map of them took about 70 bytes an id. Adds append;
// the first lookup after them sorts. Not safe for concurrent use.
type idSet struct {
	ids    []FrameID
	sorted int // ids[:sorted] are in order, without duplicates
}

func (s *idSet) add(id FrameID) { s.ids = append(s.ids, id) }

func (s *idSet) has(id FrameID) bool {
	if s.sorted < len(s.ids) {
		slices.Sort(s.ids)
		s.ids = slices.Compact(s.ids)
		s.sorted = len(s.ids)
	}
	_, ok := slices.BinarySearch(s.ids, id)
	return ok
}
