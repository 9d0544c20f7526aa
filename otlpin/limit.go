package otlpin

import (
	"net"
	"sync"
	"sync/atomic"
)

// DefaultMaxConnections is Options.MaxConnections unset: connections open
// at once on each listener.
const DefaultMaxConnections = 1024

// LimitListener returns l accepting at most n connections open at once: past
// that, Accept waits until one closes, and new connections wait in the
// kernel's backlog, taking no file descriptor of the process. So a flood of
// connections to one listener leaves descriptors for the others (the health
// endpoint's, the scrapes', the files').
func LimitListener(l net.Listener, n int) *Limited {
	return &Limited{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

// Limited is a listener made by LimitListener.
type Limited struct {
	net.Listener
	sem       chan struct{} // a slot per connection accepted or being accepted
	open      atomic.Int64
	done      chan struct{}
	closeOnce sync.Once
}

// Accept waits for a free slot, then for a connection.
func (l *Limited) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	l.open.Add(1)
	return &limitedConn{Conn: c, release: func() { l.open.Add(-1); <-l.sem }}, nil
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

// limitedConn gives its slot back when closed (once, however many times it
// is closed).
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
