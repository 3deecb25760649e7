// Package sse is the gateway's one server-sent-events (text/event-stream)
// codec:
//
//	Parser     assembles events from lines fed to it, a line possibly in
//	           pieces: for consumers that see bytes as they flow (the
//	           passthrough usage sniffer)
//	Reader     pulls events from a body under a byte limit (ErrTooLarge
//	           past it): one at a time (Next), or a Read's worth of
//	           complete events at once (Events, cut up with EventLen:
//	           the verbatim relay); in Verbatim mode Next's events' raw
//	           bytes concatenate to exactly what was read (relaying)
//	ParseEvent reads the fields of one event's raw bytes
//	AppendData frames one payload as an unnamed event ("data: ...\n\n")
//
// Nothing here writes to a client or knows a provider: relaying and
// translating streams is the pipeline's and the translators' business.
// Like the rest of the core the package is standard library only and
// interpreted by Yaegi inside Traefik, where each turn of a loop of ours
// costs what a compiled bytes.Index does over a whole buffer: the Reader
// finds event ends with bytes.Index/LastIndexByte over what a Read
// delivered and loops per line only inside the rare multi-line event.
package sse
