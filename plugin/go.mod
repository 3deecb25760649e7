module github.com/llmgateway/llmgateway/plugin

go 1.20

require github.com/llmgateway/llmgateway/gateway v0.0.0

replace github.com/llmgateway/llmgateway/gateway => ../gateway
