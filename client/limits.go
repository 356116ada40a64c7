package client

import (
	"errors"
	"fmt"
)

// The default limits: generous enough never to bother an honest server,
// tight enough that a broken or hostile one cannot exhaust its host.
const (
	// DefaultMaxMessageBytes bounds one message a server sends: 16 MiB,
	// four times gRPC's receive limit, room for a tool result carrying a
	// few large images.
	DefaultMaxMessageBytes = 16 << 20
	// DefaultMaxCatalogItems bounds each list of a server's catalog.
	DefaultMaxCatalogItems = 10_000
	// DefaultMaxCatalogPages bounds the pages fetched for one list.
	DefaultMaxCatalogPages = 100
	// DefaultNotificationRate is how many notifications a second a server
	// may send (logs, progress, resource updates, list_changed), in bursts
	// of twice as many; the rest are dropped and counted.
	DefaultNotificationRate = 1000
	// DefaultMaxServerRequests is how many requests a server may have open
	// with the host at once (sampling, elicitation, roots).
	DefaultMaxServerRequests = 8
	// DefaultServerRequestRate is how many requests a second a server may
	// make of the host, in bursts of twice as many.
	DefaultServerRequestRate = 10
)

// Limits bounds what one server may cost its host. In a ServerSpec a zero
// field takes the manager's value (WithLimits), and in the manager's a zero
// field takes the default; a negative field turns that limit off.
type Limits struct {
	// MaxMessageBytes bounds one message from the server, enforced while
	// it is read, before the bytes are held. A longer answer fails its
	// request with an error wrapping ErrMessageTooLarge (naming the size
	// seen and the limit); the connection stays.
	MaxMessageBytes int64
	// MaxCatalogItems bounds each of the server's tools, prompts,
	// resources and resource templates; MaxCatalogPages the pages fetched
	// for one of them. A catalog beyond either is a catalog error: a new
	// runtime fails its dial, a refresh keeps the last good catalog.
	MaxCatalogItems int
	MaxCatalogPages int
	// NotificationRate is how many notifications a second the server may
	// send (logs, progress, resource updates, list_changed; one budget for
	// all), in bursts of twice as many. The rest are dropped before they
	// are decoded, never queued: counted in ServerStatus.DroppedNotifications
	// and reported by EventNotificationsDropped. A dropped log message
	// makes neither an EventLog nor a record in the Manager's log, so the
	// budget bounds those too.
	NotificationRate float64
	// MaxServerRequests is how many requests the server may have open with
	// the host at once (sampling, elicitation and roots together), and
	// ServerRequestRate how many a second it may make (bursts of twice as
	// many). A request over either is answered at once with a JSON-RPC
	// error that names the limit (ErrServerRequestLimit), never reaches the
	// host's handler, and is counted in ServerStatus.RefusedServerRequests
	// and reported by EventServerRequestRefused. The limits hold however
	// the requests come: as requests of the server's on the older
	// protocols, or as the input requests of a 2026-07-28 result.
	MaxServerRequests int
	ServerRequestRate float64
}

// over returns l with every zero field taken from base.
func (l Limits) over(base Limits) Limits {
	pick := func(a, b float64) float64 {
		if a != 0 {
			return a
		}
		return b
	}
	if l.MaxMessageBytes == 0 {
		l.MaxMessageBytes = base.MaxMessageBytes
	}
	if l.MaxCatalogItems == 0 {
		l.MaxCatalogItems = base.MaxCatalogItems
	}
	if l.MaxCatalogPages == 0 {
		l.MaxCatalogPages = base.MaxCatalogPages
	}
	if l.MaxServerRequests == 0 {
		l.MaxServerRequests = base.MaxServerRequests
	}
	l.NotificationRate = pick(l.NotificationRate, base.NotificationRate)
	l.ServerRequestRate = pick(l.ServerRequestRate, base.ServerRequestRate)
	return l
}

// defaultLimits are the limits of a manager made without WithLimits.
var defaultLimits = Limits{
	MaxMessageBytes:   DefaultMaxMessageBytes,
	MaxCatalogItems:   DefaultMaxCatalogItems,
	MaxCatalogPages:   DefaultMaxCatalogPages,
	NotificationRate:  DefaultNotificationRate,
	MaxServerRequests: DefaultMaxServerRequests,
	ServerRequestRate: DefaultServerRequestRate,
}

// WithLimits sets the limits of every server whose spec leaves a field at
// zero; a zero field here keeps the default, a negative one turns the
// limit off.
func WithLimits(l Limits) Option {
	return func(o *options) { o.limits = l.over(defaultLimits) }
}

// on reports whether a limit value is in force (negative is off).
func on[T int | int64 | float64](v T) bool { return v > 0 }

// validate reports a rate that is not a number.
func (l Limits) validate() error {
	var errs []error
	for name, r := range map[string]float64{"notificationRate": l.NotificationRate, "serverRequestRate": l.ServerRequestRate} {
		if r != r { // NaN
			errs = append(errs, fmt.Errorf("spec: limits: %s: not a number", name))
		}
	}
	return errors.Join(errs...)
}
