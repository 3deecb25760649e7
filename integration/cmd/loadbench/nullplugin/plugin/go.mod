module github.com/llmgateway/llmgateway/plugin

go 1.20
