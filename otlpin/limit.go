package otlpin

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/stats"

	"github.com/otelstep/otelstep/telemetry"
)

// DefaultMaxConnections is Options.MaxConnections unset: connections open
// at once on each listener.
const DefaultMaxConnections = 1024

// LimitListener returns l accepting at most n connections open at once: past
// that, Accept waits until one closes, and new connections wait in the
// kernel's backlog, taking no file descriptor of the process. So a flood of
// connections to one listener leaves descriptors for the others (the health
// endpoint's, the scrapes', the files').
//
// The OTLP listeners also shed idle connections (shed): a bound alone let
// 12,600 idle connections hold every slot, and a sender with data waited
// in the backlog until they timed out.
func LimitListener(l net.Listener, n int) *Limited {
	return &Limited{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

// Under an idle flood, well-behaved clients still get through (shed):
//
//   - A full listener closes its longest-idle connection for the next one
//     it accepts: an idle connection's deadline is, under pressure, now.
//     Idle is no request in flight (HTTP: between requests or before the
//     first one's headers; gRPC: no stream open), or a request in flight
//     that has read nothing for stallAfter. A request being answered is
//     never cut for another connection.
//   - A peer (an IP address) holds at most perPeer of the connections: its
//     new connection past that replaces its own longest-idle one, or, when
//     all of its connections are busy, is closed at once
//     (ReasonPeerConnections). Another peer's connection is then never
//     what makes room for it.
//
// The server tells which connections are busy: the HTTP server's ConnState
// hook (httpConnState), the gRPC server's stats handler (connTracker).

// stallAfter is how long a connection with a request in flight that reads
// nothing counts as busy: longer than a request waits for the pipeline
// (ConsumeTimeout), short beside the minutes an idle flood holds on.
const stallAfter = 30 * time.Second

// Limited is a listener made by LimitListener.
type Limited struct {
	net.Listener
	sem       chan struct{} // a slot per connection accepted or being accepted
	open      atomic.Int64
	done      chan struct{}
	closeOnce sync.Once

	// Set by shed before the listener serves; shedding is false for a
	// listener that only bounds (its server tells no busy connections).
	shedding bool
	perPeer  int
	refused  func(remote net.Addr, peerOpen int) // a connection closed for its peer's share
	evicted  func(remote net.Addr, why Reason)

	mu     sync.Mutex
	conns  map[*limitedConn]struct{} // open, when shedding
	byPeer map[string]int
	byAddr map[string]*limitedConn // by remote address, for connTracker

	evictions, refusals atomic.Uint64
}

// shed has l shed idle connections (above) and hold at most perPeer
// connections of one peer (0: no such bound). refused and evicted are
// told of each connection closed.
func (l *Limited) shed(perPeer int, refused func(net.Addr, int), evicted func(net.Addr, Reason)) {
	l.shedding, l.perPeer, l.refused, l.evicted = true, perPeer, refused, evicted
	l.conns, l.byPeer, l.byAddr = map[*limitedConn]struct{}{}, map[string]int{}, map[string]*limitedConn{}
}

// Accept waits for a free slot, then for a connection. A shedding listener
// that is full closes its longest-idle connection to make one.
func (l *Limited) Accept() (net.Conn, error) {
	for {
		select {
		case l.sem <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		default:
			if l.shedding {
				l.evict("", evictedListenerFull)
			}
			select {
			case l.sem <- struct{}{}:
			case <-l.done:
				return nil, net.ErrClosed
			}
		}
		c, err := l.Listener.Accept()
		if err != nil {
			<-l.sem
			return nil, err
		}
		lc := &limitedConn{Conn: c, l: l, peer: peerOf(c.RemoteAddr())}
		lc.read.Store(time.Now().UnixNano())
		if l.shedding && !l.admit(lc) {
			c.Close()
			<-l.sem
			continue
		}
		l.open.Add(1)
		return lc, nil
	}
}

// admit registers lc, making room among its peer's connections when the
// peer holds its share; false (lc not registered) when none of them is
// idle.
func (l *Limited) admit(lc *limitedConn) bool {
	for {
		l.mu.Lock()
		n := l.byPeer[lc.peer]
		if l.perPeer <= 0 || n < l.perPeer {
			l.conns[lc] = struct{}{}
			l.byPeer[lc.peer]++
			l.byAddr[lc.RemoteAddr().String()] = lc
			l.mu.Unlock()
			return true
		}
		l.mu.Unlock()
		if !l.evict(lc.peer, evictedPeerShare) {
			l.refusals.Add(1)
			if l.refused != nil {
				l.refused(lc.RemoteAddr(), n)
			}
			return false
		}
	}
}

// evict closes the longest-idle connection (of peer, or of any peer when
// peer is ""); false when there is none idle.
func (l *Limited) evict(peer string, why Reason) bool {
	now := time.Now().UnixNano()
	var victim *limitedConn
	var oldest int64
	l.mu.Lock()
	for c := range l.conns {
		if peer != "" && c.peer != peer {
			continue
		}
		read := c.read.Load()
		if c.busy.Load() > 0 && now-read < int64(stallAfter) {
			continue
		}
		if victim == nil || read < oldest {
			victim, oldest = c, read
		}
	}
	if victim != nil {
		l.forget(victim) // not chosen twice while it closes
	}
	l.mu.Unlock()
	if victim == nil {
		return false
	}
	l.evictions.Add(1)
	if l.evicted != nil {
		l.evicted(victim.RemoteAddr(), why)
	}
	victim.Close()
	return true
}

// forget unregisters c; l.mu is held.
func (l *Limited) forget(c *limitedConn) {
	if _, ok := l.conns[c]; !ok {
		return
	}
	delete(l.conns, c)
	if l.byPeer[c.peer]--; l.byPeer[c.peer] <= 0 {
		delete(l.byPeer, c.peer)
	}
	if l.byAddr[c.RemoteAddr().String()] == c {
		delete(l.byAddr, c.RemoteAddr().String())
	}
}

// conn is the open connection from remote, nil if none.
func (l *Limited) conn(remote net.Addr) *limitedConn {
	if remote == nil || !l.shedding {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byAddr[remote.String()]
}

// closeAll closes every connection a shedding listener holds, or, when
// unusedOnly, those that have not read a byte: a shutdown's, for the
// connections their server does not know yet (a gRPC connection still in
// its handshake holds gRPC's Stop up to its handshake timeout).
func (l *Limited) closeAll(unusedOnly bool) {
	if !l.shedding {
		return
	}
	l.mu.Lock()
	conns := make([]*limitedConn, 0, len(l.conns))
	for c := range l.conns {
		if !unusedOnly || !c.used.Load() {
			conns = append(conns, c)
		}
	}
	l.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// Close closes the listener; an Accept waiting for a slot returns.
func (l *Limited) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// Open is the number of connections accepted and not yet closed.
func (l *Limited) Open() int { return int(l.open.Load()) }

// Max is the most connections open at once.
func (l *Limited) Max() int { return cap(l.sem) }

// peerOf is the peer of a remote address: its IP.
func peerOf(a net.Addr) string {
	if a == nil {
		return ""
	}
	if host, _, err := net.SplitHostPort(a.String()); err == nil {
		return host
	}
	return a.String()
}

// limitedConn gives its slot back when closed (once, however many times it
// is closed).
type limitedConn struct {
	net.Conn
	l    *Limited
	peer string
	once sync.Once
	// busy is the requests in flight on it (HTTP: 0 or 1; gRPC: streams);
	// read is when it last read a byte (unix ns).
	busy atomic.Int32
	read atomic.Int64
	// used: it has read a byte.
	used atomic.Bool
}

func (c *limitedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.l.shedding {
		c.read.Store(time.Now().UnixNano())
		if !c.used.Load() {
			c.used.Store(true)
		}
	}
	return n, err
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		l := c.l
		if l.shedding {
			l.mu.Lock()
			l.forget(c)
			l.mu.Unlock()
		}
		l.open.Add(-1)
		<-l.sem
	})
	return err
}

// connTracker is the gRPC server's stats handler that tells its listener
// which connections have streams open.
type connTracker struct{ l *Limited }

type connKey struct{}

func (t connTracker) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	if c := t.l.conn(info.RemoteAddr); c != nil {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

func (connTracker) HandleConn(context.Context, stats.ConnStats) {}

func (connTracker) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (connTracker) HandleRPC(ctx context.Context, s stats.RPCStats) {
	c, _ := ctx.Value(connKey{}).(*limitedConn)
	if c == nil {
		return
	}
	switch s.(type) {
	case *stats.Begin:
		c.busy.Add(1)
	case *stats.End:
		c.busy.Add(-1)
	}
}

// The messages of the lines about connections closed to make room.
const (
	msgFirstEviction = "OTLP listener: idle connections closed to make room for new ones; more are counted and reported at most once a period"
	msgStillEvicting = "OTLP listener: idle connections still closed to make room"
)

// shed has the receiver's listener l of transport tr shed idle
// connections, at most perPeer of one peer's (Limited.shed), its closings
// recorded as refusals (ReasonPeerConnections) and evictions.
func (r *Receiver) shed(l *Limited, tr telemetry.Transport, perPeer int) {
	refused := func(remote net.Addr, open int) {
		r.refuse(refusal{signal: "unknown", tr: tr, reason: ReasonPeerConnections, remote: remote.String(), answer: "connection closed",
			err: fmt.Sprintf("peer %s holds %d connections, every one busy, of the at most %d one peer may hold (of %d)", peerOf(remote), open, perPeer, l.Max())})
	}
	evicted := func(remote net.Addr, why Reason) {
		r.evictions.add(refusal{signal: "unknown", tr: tr, reason: why, remote: remote.String(), answer: "idle connection closed",
			err: fmt.Sprintf("%d connections open of at most %d, at most %d of one peer", l.Open(), l.Max(), perPeer)}, time.Now())
	}
	l.shed(perPeer, refused, evicted)
}
