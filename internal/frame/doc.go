// Package frame bounds the messages a server sends, as the transports
// read them: a stdio server's lines and an HTTP server's SSE events. A
// message over the limit is cut and discarded while it is read, so that
// the host never holds more than the limit of it, and the request it
// answered is failed in its place with a *TooLarge (see Limiter).
package frame
