package replay

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// A checkpoint records which bytes of one file have reached one backend.
//
// Invariant: every byte before Offset is done (sent, or reported and
// skipped); each range in Done, all at or after Offset, is done too; nothing
// else is. Requests complete out of order (several are in flight), so Done
// holds what finished beyond the first gap; a resumed replay skips it, which
// is what makes a clean stop never send a line twice.
//
// A checkpoint is keyed by the file and the endpoint: replaying the same
// files to another backend starts afresh. Lines of a signal left out by
// --signal are never marked done, so one checkpoint serves every filter.
type checkpoint struct {
	Version  int    `json:"version"`
	File     string `json:"file"`
	Endpoint string `json:"endpoint"` // without userinfo
	// PrefixLen and PrefixHash identify the file: FNV-64a of its first
	// PrefixLen bytes. A file rewritten since (another job's file copied
	// over it, say) no longer matches and is refused rather than resumed
	// at a meaningless offset.
	PrefixLen  int64     `json:"prefix_len"`
	PrefixHash string    `json:"prefix_hash"`
	Offset     int64     `json:"offset"`
	Line       int       `json:"line"` // lines before Offset
	Done       []span    `json:"done,omitempty"`
	Skipped    int       `json:"skipped"` // lines reported and skipped, over all runs
	Updated    time.Time `json:"updated"`
	// Live is set when otelstep keeps this checkpoint as its delivery
	// record (Record); a replay keeps it as it is.
	Live *liveState `json:"live,omitempty"`
	// Accepted of the Skipped lines were acknowledged (--accept-skipped):
	// a later run does not fail for them.
	Accepted int `json:"accepted,omitempty"`
}

// liveState is what otelstep's delivery record knows beyond a
// checkpoint: where its record of the file begins and how far the file
// was written.
type liveState struct {
	// From and FromLine: the file's first From bytes, FromLine lines,
	// were there when the record was begun, and their fate is unknown:
	// a backfill leaves them to replay.
	From     int64 `json:"from"`
	FromLine int   `json:"from_line"`
	// Size and Lines: the file's first Size bytes hold Lines lines, as
	// otelstep wrote them.
	Size  int64 `json:"size"`
	Lines int   `json:"lines"`
	// Refused are the ranges the backend refused (a 401, a 400): not
	// backfilled by otelstep, left to `otelstep replay`, which sends
	// every range not done; RefusedReason says why.
	Refused       []span `json:"refused,omitempty"`
	RefusedReason string `json:"refused_reason,omitempty"`
}

// span is a done byte range [Start, End) holding lines [FirstLine, FirstLine+Lines).
type span struct {
	Start     int64 `json:"start"`
	End       int64 `json:"end"`
	FirstLine int   `json:"first_line"`
	Lines     int   `json:"lines"`
}

const (
	stateVersion = 1
	prefixLen    = 4096
)

// statePath is where f's checkpoint lives: beside it as
// .NAME.replay-KEY.json, or in dir as HASH-KEY.json when --state is given
// (job folders may be read-only, or shared by several replays).
func statePath(f input, dir, key string) string {
	if dir == "" {
		return filepath.Join(filepath.Dir(f.abs), "."+filepath.Base(f.abs)+".replay-"+key+".json")
	}
	h := sha256.Sum256([]byte(f.abs))
	return filepath.Join(dir, hex.EncodeToString(h[:8])+"-"+key+".json")
}

// stateKey names an endpoint in state file names.
func stateKey(endpoint string) string {
	h := sha256.Sum256([]byte(endpoint))
	return hex.EncodeToString(h[:6])
}

// prefixHash hashes the first n bytes of the file at path.
func prefixHash(path string, n int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := fnv.New64a()
	got, err := io.Copy(h, io.LimitReader(f, n))
	if err != nil {
		return "", err
	}
	if got < n {
		return "", errShrunk
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

var errShrunk = errors.New("the file is shorter than when it was checkpointed")

// loadCheckpoint reads the checkpoint at path for file f. A missing file is a
// fresh start (nil, nil). One that does not match f is an error: resuming it
// could skip or double lines, and --from-start is the user's call.
func loadCheckpoint(path string, f input) (*checkpoint, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, unwrapPathError(err))
	}
	var cp checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		return nil, fmt.Errorf("checkpoint %s: not a replay checkpoint (%v); delete it or use --from-start", path, err)
	}
	if cp.Version != stateVersion {
		return nil, fmt.Errorf("checkpoint %s: version %d, want %d; use --from-start", path, cp.Version, stateVersion)
	}
	if cp.Offset < 0 || cp.Line < 0 {
		return nil, fmt.Errorf("checkpoint %s: negative offset; use --from-start", path)
	}
	if cp.Offset > f.size {
		return nil, fmt.Errorf("checkpoint %s: it is at byte %d but the file has %d: the file was rewritten; use --from-start", path, cp.Offset, f.size)
	}
	if cp.PrefixLen > 0 {
		h, err := prefixHash(f.abs, cp.PrefixLen)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w; use --from-start", path, err)
		}
		if h != cp.PrefixHash {
			return nil, fmt.Errorf("checkpoint %s: the file's first %d bytes changed since: it was rewritten; use --from-start", path, cp.PrefixLen)
		}
	}
	// otelstep's delivery log beside it holds what was delivered since it
	// was written (deliverylog.go).
	logged, err := readDeliveryLog(path, f.size)
	if err != nil {
		return nil, err
	}
	mergeDone(&cp, logged)
	sort.Slice(cp.Done, func(i, j int) bool { return cp.Done[i].Start < cp.Done[j].Start })
	return &cp, nil
}

// tracker keeps one file's checkpoint up to date as chunks complete, and
// writes it (atomically: temp file and rename) at most every interval and
// on flush.
type tracker struct {
	path     string // "" in a dry run: nothing is written
	interval time.Duration

	mu      sync.Mutex
	cp      checkpoint
	pending map[int64]span // done, not yet contiguous with cp.Offset, by Start
	dirty   bool
	last    time.Time
	err     error // the first write error
}

func newTracker(path string, cp checkpoint, interval time.Duration) *tracker {
	t := &tracker{path: path, cp: cp, interval: interval, pending: map[int64]span{}}
	for _, s := range cp.Done {
		t.pending[s.Start] = s
	}
	t.cp.Done = nil
	return t
}

// done records that s is done and advances the offset over every range now
// contiguous with it.
func (t *tracker) done(s span, skipped int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cp.Skipped += skipped
	if s.End > s.Start || s.Lines > 0 {
		t.pending[s.Start] = s
	}
	for {
		n, ok := t.pending[t.cp.Offset]
		if !ok {
			break
		}
		delete(t.pending, n.Start)
		t.cp.Offset = n.End
		t.cp.Line = n.FirstLine + n.Lines - 1
		if n.End == n.Start { // an empty range cannot advance: avoid looping on it
			break
		}
	}
	t.dirty = true
	if time.Since(t.last) >= t.interval {
		t.writeLocked()
	}
}

// accept acknowledges every line skipped so far.
func (t *tracker) accept() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cp.Accepted != t.cp.Skipped {
		t.cp.Accepted = t.cp.Skipped
		t.dirty = true
	}
}

// flush writes the checkpoint if anything changed since the last write.
func (t *tracker) flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dirty {
		t.writeLocked()
	}
	return t.err
}

func (t *tracker) writeLocked() {
	t.last = time.Now()
	t.dirty = false
	if t.path == "" {
		return
	}
	cp := t.cp
	cp.Done = make([]span, 0, len(t.pending))
	for _, s := range t.pending {
		cp.Done = append(cp.Done, s)
	}
	sort.Slice(cp.Done, func(i, j int) bool { return cp.Done[i].Start < cp.Done[j].Start })
	cp.Updated = time.Now().UTC()
	if err := writeAtomic(t.path, &cp, false); err != nil && t.err == nil {
		t.err = err
	}
}

// writeAtomic writes cp to path through a temporary file renamed over it,
// so that a reader (or a crash) sees the old checkpoint or the new one;
// with sync, the new one is on disk when it returns.
func writeAtomic(path string, cp *checkpoint, sync bool) error {
	data, err := json.MarshalIndent(cp, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".replay-state-*")
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, unwrapPathError(err))
	}
	_, werr := tmp.Write(append(data, '\n'))
	if werr == nil && sync {
		werr = tmp.Sync()
	}
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("checkpoint %s: %w", path, werr)
	}
	return nil
}
