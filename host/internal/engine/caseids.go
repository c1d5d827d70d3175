package engine

import (
	"context"
	"hash/maphash"
	"slices"
)

// caseIDs remembers the case ids a dataset has given, to refuse a repeated
// one, in memory that stays small as the dataset grows: a keyed 64-bit
// hash of each id, most of them in one sorted slice (8 bytes a case) and
// the latest in a map merged into it when it reaches an eighth of the
// slice's length (≈ 11 bytes a case in all, where a map of the hashes
// held ≈ 24 and a map of the ids themselves ≈ 60: what a run keeps per
// case made its heap, and with it peak RSS, grow with the dataset). A
// hash already seen is a repeated id unless two ids collide (odds ≈
// n²/2⁶⁵, and the random seed keeps a dataset from choosing them), so the
// dataset is read again up to the record to find where the id was first
// (firstRecord); an id that collided is then kept whole.
type caseIDs struct {
	seed     maphash.Seed
	sorted   []uint64            // hashes seen, sorted
	recent   map[uint64]struct{} // hashes seen since the last merge into sorted
	collided map[string]int      // ids whose hash an earlier, other id had → record
}

// minRecent is how many hashes recent takes before its first merge: a
// small dataset never merges.
const minRecent = 1024

func newCaseIDs() caseIDs {
	return caseIDs{seed: maphash.MakeSeed(), recent: map[uint64]struct{}{}}
}

// add records id, seen at record of the dataset at path; when the id was
// seen before it returns the record where it was first, or 0 when the
// dataset could not be read again to find it.
func (s *caseIDs) add(path, id string, record int) (prev int, repeated bool) {
	if p, ok := s.collided[id]; ok {
		return p, true
	}
	h := maphash.String(s.seed, id)
	if !s.seen(h) {
		s.insert(h)
		return 0, false
	}
	p, found, err := firstRecord(path, id, record)
	if err != nil || found {
		// A run must not go on past a repeated id it could not rule out.
		return p, true
	}
	if s.collided == nil {
		s.collided = map[string]int{}
	}
	s.collided[id] = record
	return 0, false
}

func (s *caseIDs) seen(h uint64) bool {
	if _, ok := s.recent[h]; ok {
		return true
	}
	_, ok := slices.BinarySearch(s.sorted, h)
	return ok
}

func (s *caseIDs) insert(h uint64) {
	s.recent[h] = struct{}{}
	if len(s.recent) >= max(minRecent, len(s.sorted)/8) {
		s.merge()
	}
}

// merge moves recent's hashes into sorted, in one pass over both.
func (s *caseIDs) merge() {
	add := make([]uint64, 0, len(s.recent))
	for h := range s.recent {
		add = append(add, h)
	}
	slices.Sort(add)
	out := make([]uint64, 0, len(s.sorted)+len(add))
	a, b := s.sorted, add
	for len(a) > 0 && len(b) > 0 {
		if a[0] < b[0] {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	s.sorted = append(append(out, a...), b...)
	clear(s.recent)
}

// firstRecord returns the first record before record of the dataset at
// path whose case id is id, reading the file again from the start.
func firstRecord(path, id string, record int) (int, bool, error) {
	d, err := OpenDataset(path)
	if err != nil {
		return 0, false, err
	}
	defer d.Close()
	for {
		c, err := d.Next(context.Background())
		if err != nil {
			return 0, false, err
		}
		if d.line >= record {
			return 0, false, nil
		}
		if c.ID == id {
			return d.line, true, nil
		}
	}
}
