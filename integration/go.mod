module github.com/llmgateway/llmgateway/integration

go 1.26

require github.com/llmgateway/llmgateway/gateway v0.0.0

replace github.com/llmgateway/llmgateway/gateway => ../gateway
