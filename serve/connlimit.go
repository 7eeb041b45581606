package serve

// The connections served at once. Each takes a file descriptor, and so do
// the runs (their state database, their scripts' pipes): a flood of
// connections, even ones that never send a request (each is let go after
// ReadHeaderTimeout, but others come), would take every descriptor the
// process may open, and the runs would fail. Past MaxConns the server
// accepts no more until one closes: new clients wait in the kernel's
// backlog, the runs go on.

import (
	"net"
	"sync"
)

// defaultMaxConns is the default of Options.MaxConns.
const defaultMaxConns = 1024

// limitListener accepts a connection only while fewer than cap(sem) are
// open.
type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func limitConns(l net.Listener, n int) *limitListener {
	return &limitListener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
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
	return &limitConn{Conn: c, release: sync.OnceFunc(func() { <-l.sem })}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its place back when it closes.
type limitConn struct {
	net.Conn
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
