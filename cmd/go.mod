module github.com/llmgateway/llmgateway/cmd

go 1.26

require (
	github.com/llmgateway/llmgateway/gateway v0.0.0
	github.com/stretchr/testify v1.12.1
	gopkg.in/yaml.v3 v3.0.1
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect

replace github.com/llmgateway/llmgateway/gateway => ../gateway
