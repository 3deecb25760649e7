package gateway

import (
	"net/http"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// Metering: where the routes meet limits and accounting.

// admit counts the request in its scopes and refuses it when a limit is
// exhausted (429), the store is down and failOpen is off (503), or the
// model has no known price while the caller has a cost budget (402).
// model is "" when no price is needed: the request names no model
// (native passthrough without a readable one) or is never cost-accounted
// (the media routes).
func admit(g *Gateway, r *http.Request, user *userRuntime, provider, model string) *apiError {
	if e := g.limiter.checkAndCount(r.Context(), user.scopes); e != nil {
		return e
	}
	if model == "" || g.cfg.allowUnpriced || !user.costBudget {
		return nil
	}
	if _, priced := priceOf(g, provider, model); !priced {
		return errUnpriced(provider, model)
	}
	return nil
}

// errUnpriced is the 402 of a cost-budgeted caller's unpriced model.
func errUnpriced(provider, model string) *apiError {
	return apierr.New(http.StatusPaymentRequired, "invalid_request_error", "model_unpriced",
		"model \""+model+"\" on provider \""+provider+"\" has no known price and your group or user has a cost budget; "+
			"an operator can add a pricing entry or set allowUnpricedWithCostBudget")
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
