package faultinject_test

import (
	"bufio"
	"net"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultinject"
)

// Cut breaks the connections through the proxy at both ends; the next
// connection goes through.
func TestProxyCut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	serverSide := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			serverSide <- c
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	p := faultinject.StartProxy(t, ln.Addr().String())
	echo := func(c net.Conn) error {
		if _, err := c.Write([]byte("ping\n")); err != nil {
			return err
		}
		_, err := bufio.NewReader(c).ReadString('\n')
		return err
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := echo(c); err != nil {
		t.Fatal(err)
	}
	<-serverSide
	if n := p.Cut(); n != 1 {
		t.Fatalf("cut %d connections", n)
	}
	if err := echo(c); err == nil {
		t.Fatal("the cut connection still works")
	}
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := echo(c2); err != nil {
		t.Fatalf("a new connection after the cut: %v", err)
	}
}
