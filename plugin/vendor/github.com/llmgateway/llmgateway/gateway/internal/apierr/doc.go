// Package apierr is the gateway's one error type, Error: an HTTP status,
// a client-safe message and classification, and a log-only cause that is
// never written to a client. It also names the classes of upstream
// failure (Class), so that code below the pipeline — the translators —
// can classify the errors it raises; what the pipeline does about each
// class (retry, failover, success rates) is the gateway's failure table,
// not this package's.
//
// Writing an Error to a client is the business of the client's wire
// format (the OpenAI envelope lives with the pipeline). Like the rest of
// the core the package is standard library only and interpreted by Yaegi
// inside Traefik.
package apierr
