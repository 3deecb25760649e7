// Package sse is the gateway's one server-sent-events (text/event-stream)
// codec:
//
//	Parser     assembles events from lines fed to it, a line possibly in
//	           pieces: for consumers that see bytes as they flow (the
//	           passthrough usage sniffer)
//	Reader     pulls events from a body, one at a time, under a byte limit
//	           (ErrTooLarge past it); in Verbatim mode its events' raw
//	           bytes concatenate to exactly what was read (relaying)
//	AppendData frames one payload as an unnamed event ("data: ...\n\n")
//
// Nothing here writes to a client or knows a provider: relaying and
// translating streams is the pipeline's and the translators' business.
// Like the rest of the core the package is standard library only and
// interpreted by Yaegi inside Traefik.
package sse
