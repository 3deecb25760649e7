package gateway

import (
	"net/http"

	"github.com/llmgateway/llmgateway/gateway/internal/store"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// Metering: where the routes meet limits and accounting.

// admit counts the request in its scopes and refuses it when a limit is
// exhausted or its reservation does not fit a token or cost budget
// (429), the store is down and failOpen is off (503), or the model has no
// known price while the caller has a cost budget (402). model is "" when
// no price is needed: the request names no model (native passthrough
// without a readable one) or is never cost-accounted (the media routes).
// tokens and cost are the request's worst case (reservationFor), reserved
// when the caller has a token or cost budget and the route is priced;
// the reservation (c.resv) is settled by the account stage, or released
// when the request ends without one.
func admit(c *call, provider, model string, tokens, cost int64) *apiError {
	if e := count(c, tokens, cost, nil); e != nil {
		return e
	}
	return checkPriced(c, provider, model)
}

// count is admit's counting half: the request counted (and reserved
// for) in its scopes, with peek folded into the store's round trip when
// the store can.
func count(c *call, tokens, cost int64, peek *store.Peek) *apiError {
	g, user := c.g, c.user
	if panicProbe != nil {
		defer panicProbe("count", c.trace.requestID)
	}
	if user.budgeted && c.route.priced {
		r, e := g.limiter.reservePeek(c.r.Context(), user.scopes, tokens, cost, peek)
		if e != nil {
			return e
		}
		r.ids = c.trace.logTail
		c.resv = r
		c.admitted = true
		return nil
	}
	e := g.limiter.checkAndCountPeek(c.r.Context(), user.scopes, peek)
	c.admitted = e == nil
	return e
}

// checkPriced is admit's price half: 402 when a cost-budgeted caller's
// model has no known price.
func checkPriced(c *call, provider, model string) *apiError {
	g, user := c.g, c.user
	if model == "" || g.cfg.allowUnpriced || !user.costBudget {
		return nil
	}
	if _, priced := priceOf(g, provider, model); !priced {
		return errUnpriced(provider, model)
	}
	return nil
}

// outputCap is what a request may generate, in tokens: its own cap
// (capTokens), else the model's maximum output when known, else
// defaultOutputCapTokens.
func outputCap(capTokens, modelMax int64) int64 {
	if capTokens > 0 {
		return capTokens
	}
	if modelMax > 0 {
		return modelMax
	}
	return defaultOutputCapTokens
}

// worstCost is the cost in micro-USD of prompt input and output tokens
// at the dearest priced candidate (0 when none is priced).
func worstCost(g *Gateway, candidates []candidate, prompt, output int64) int64 {
	var worst int64
	u := translate.Usage{PromptTokens: prompt, CompletionTokens: output}
	for i := 0; i < len(candidates); i++ {
		if pr, ok := priceOf(g, candidates[i].provider.name, candidates[i].model); ok {
			if c := costMicros(pr, u); c > worst {
				worst = c
			}
		}
	}
	return worst
}

// reservationFor is a unified-route request's worst case: the prompt
// estimate, ceil(body bytes / 4), plus its output cap (none for
// embedding routes; without the request's own, the largest of the
// candidates routing may use), in tokens, and that at the dearest
// candidate's price.
func reservationFor(c *call) (int64, int64) {
	if !c.user.budgeted || !c.route.priced {
		return 0, 0
	}
	prompt := int64((len(c.req.raw) + 3) / 4)
	var output int64
	if !c.route.noOutput {
		output = outputCap(c.req.maxOutputTokens, maxOutputTokens(c.g, c.target))
		if c.req.maxOutputTokens == 0 && len(c.cands) > 1 && c.target.maxOutput == c.target.candidates[0].maxOutput {
			// Routing may serve the request from any candidate of the
			// walk: reserve for the one that may write the most (an
			// alias's own maxOutputTokens, when set, stands for all).
			for i := 0; i < len(c.cands); i++ {
				if o := outputCap(0, c.cands[i].maxOutput); o > output {
					output = o
				}
			}
		}
	}
	var cost int64
	if c.user.costBudget {
		cost = worstCost(c.g, c.target.candidates, prompt, output)
	}
	return prompt + output, cost
}

// errUnpriced is the 402 of a cost-budgeted caller's unpriced model.
func errUnpriced(provider, model string) *apiError {
	return apierr.New(http.StatusPaymentRequired, "invalid_request_error", "model_unpriced",
		"model \""+model+"\" on provider \""+provider+"\" has no known price and your group or user has a cost budget; "+
			"an operator can add a pricing entry or set allowUnpricedWithCostBudget")
}

func hasTokenBudget(scopes []limitScope) bool {
	for i := 0; i < len(scopes); i++ {
		if scopes[i].limits.hasTokenLimits() {
			return true
		}
	}
	return false
}

func hasCostBudget(scopes []limitScope) bool {
	for i := 0; i < len(scopes); i++ {
		if scopes[i].limits.hasCostLimits() {
			return true
		}
	}
	return false
}

// priceOf is the model's price and whether one is known.
func priceOf(g *Gateway, provider, model string) (modelPrice, bool) {
	return g.pricer.price(provider, model)
}

// costOf is a request's cost in micro-USD (0, with a warning, when the
// model has no known price).
func costOf(g *Gateway, provider, model string, u translate.Usage) int64 {
	if model == "" {
		return 0
	}
	cost, _ := g.pricer.cost(provider, model, u)
	return cost
}
