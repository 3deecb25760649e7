package apierr

// Class names what went wrong with an upstream exchange. The zero value,
// ClassNone, is the gateway's own refusal, not an upstream failure.
type Class int

// The classes of upstream failure. ClassCount is their number, for
// tables indexed by Class.
const (
	ClassNone             Class = iota // not an upstream failure (the gateway's own refusal)
	ClassConnect                       // no answer: dial, TLS, reset, EOF before or inside the body
	ClassStall                         // the progress watchdog fired
	ClassClientCancel                  // the client went away first
	ClassBadRequest                    // the upstream answered 400
	ClassRefused                       // another 4xx (404, 409, 413, 422, …)
	ClassCredential                    // the upstream refused the gateway's own key (401/403, Gemini's API_KEY_INVALID)
	ClassRateLimited                   // 429
	ClassServer                        // 5xx
	ClassUnexpectedStatus              // a non-2xx status outside 4xx/5xx
	ClassOversize                      // the answer passed the response size cap
	ClassTruncated                     // a stream ended without its terminator, or inside an event
	ClassInterrupted                   // a stream's read failed after its headers
	ClassBadResponse                   // the answer could not be understood (wrong content type, bad JSON)
	ClassCount
)
