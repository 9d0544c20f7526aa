package replay

import (
	"reflect"
	"testing"
)

// lineSpans is n one-line spans of 10 bytes each from line first on.
func lineSpan(first, n int) span {
	return span{Start: int64(first-1) * 10, End: int64(first-1+n) * 10, FirstLine: first, Lines: n}
}

func TestSpanSetAddMergesAndSubSplits(t *testing.T) {
	var ss spanSet
	// Lines 1-10 arrive out of order, some missing.
	for _, l := range []int{3, 1, 2, 7, 5, 6, 9} {
		ss.add(lineSpan(l, 1))
	}
	want := []span{lineSpan(1, 3), lineSpan(5, 3), lineSpan(9, 1)}
	if !reflect.DeepEqual(ss.spans, want) {
		t.Fatalf("after adds: %+v, want %+v", ss.spans, want)
	}
	ss.add(lineSpan(4, 1))
	ss.add(lineSpan(8, 1))
	if want := []span{lineSpan(1, 9)}; !reflect.DeepEqual(ss.spans, want) {
		t.Fatalf("after filling the gaps: %+v, want %+v", ss.spans, want)
	}
	ss.add(lineSpan(2, 3)) // already there: no change
	if want := []span{lineSpan(1, 9)}; !reflect.DeepEqual(ss.spans, want) {
		t.Fatalf("after adding what is there: %+v, want %+v", ss.spans, want)
	}
	ss.sub(lineSpan(4, 2))
	if want := []span{lineSpan(1, 3), lineSpan(6, 4)}; !reflect.DeepEqual(ss.spans, want) {
		t.Fatalf("after sub: %+v, want %+v", ss.spans, want)
	}
	ss.sub(lineSpan(1, 3))
	if want := []span{lineSpan(6, 4)}; !reflect.DeepEqual(ss.spans, want) {
		t.Fatalf("after sub of a whole range: %+v, want %+v", ss.spans, want)
	}
	if ss.bytes() != 40 || ss.lines() != 4 {
		t.Errorf("bytes %d lines %d, want 40 and 4", ss.bytes(), ss.lines())
	}
}

func TestSpanSetGaps(t *testing.T) {
	ss := spanSet{spans: []span{lineSpan(1, 2), lineSpan(5, 1), lineSpan(8, 2)}}
	// From line 2 on (after 1 line, at byte 10) to the end of line 12.
	got := ss.gaps(10, 1, 120, 12)
	want := []span{lineSpan(3, 2), lineSpan(6, 2), lineSpan(10, 3)}
	if !reflect.DeepEqual(got.spans, want) {
		t.Fatalf("gaps %+v, want %+v", got.spans, want)
	}
	if got := (&spanSet{}).gaps(0, 0, 30, 3); !reflect.DeepEqual(got.spans, []span{lineSpan(1, 3)}) {
		t.Fatalf("gaps of nothing: %+v", got.spans)
	}
}
