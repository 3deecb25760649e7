module github.com/llmgateway/llmgateway

go 1.20
