package engine

import (
	"context"
	"hash/maphash"
	"math"
)

// caseIDs remembers the case ids a dataset has given, to refuse a repeated
// one, in memory that stays small as the dataset grows: a keyed 64-bit
// hash of each id and the record it came from (≈ 20 bytes a case, where a
// map of the ids themselves held ≈ 60 and made the heap — and peak RSS —
// grow with the dataset: +12 MB at 100,000 cases, bench/README.md). A
// hash already seen is a repeated id unless two ids collide (odds ≈ n²/2⁶⁵,
// and the random seed keeps a dataset from choosing them), so the first
// record is read again to tell which (sameID); an id that collided is
// then kept whole.
type caseIDs struct {
	seed     maphash.Seed
	first    map[uint64]uint32 // hash of an id → record where first seen
	collided map[string]int    // ids whose hash an earlier, other id had
}

func newCaseIDs() caseIDs {
	return caseIDs{seed: maphash.MakeSeed(), first: map[uint64]uint32{}}
}

// add records id, seen at record of the dataset at path; when the id was
// seen before it returns the record where it was first.
func (s *caseIDs) add(path, id string, record int) (prev int, repeated bool) {
	if p, ok := s.collided[id]; ok {
		return p, true
	}
	h := maphash.String(s.seed, id)
	p, ok := s.first[h]
	if !ok {
		s.first[h] = uint32(min(record, math.MaxUint32))
		return 0, false
	}
	if sameID(path, int(p), id) {
		return int(p), true
	}
	if s.collided == nil {
		s.collided = map[string]int{}
	}
	s.collided[id] = record
	return 0, false
}

// sameID reports whether record of the dataset at path has the case id id,
// reading the file again from the start. It says true when the file
// cannot be read again as it was: a run must not go on past a repeated id
// it could not rule out.
func sameID(path string, record int, id string) bool {
	d, err := OpenDataset(path)
	if err != nil {
		return true
	}
	defer d.Close()
	for {
		c, err := d.Next(context.Background())
		if err != nil {
			return true
		}
		if d.line >= record {
			return d.line != record || c.ID == id
		}
	}
}
