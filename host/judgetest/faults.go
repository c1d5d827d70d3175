package judgetest

import (
	"encoding/json"
	"fmt"
)

// Faults real OpenAI-compatible servers produce, as Replies.

// Truncated is a reply cut off at the token limit: content as far as it
// got, finish_reason "length". Content may be cut mid-JSON or, as servers
// also do, be complete JSON that happened to end at the limit.
func Truncated(content string) Reply {
	return Reply{Content: content, FinishReason: "length"}
}

// ErrorIn200 is an HTTP 200 whose body is {"error": {...}} instead of a
// completion, as some proxies answer an upstream failure.
func ErrorIn200(message string) Reply {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": message, "type": "server_error", "param": nil, "code": nil,
	}})
	return Reply{RawBody: string(body), ContentType: "application/json"}
}

// PlainText is a reply of status with a text/plain body, as a load
// balancer or a bare web framework answers.
func PlainText(status int, text string) Reply {
	return Reply{Status: status, RawBody: text, ContentType: "text/plain; charset=utf-8"}
}

// Server families whose rejection of response_format json_schema
// SchemaRejection reproduces.
const (
	// OpenAI on a model without Structured Outputs (gpt-3.5-turbo, gpt-4).
	FlavorOpenAI = "openai"
	// llama.cpp's server before it learned json_schema.
	FlavorLlamaCpp = "llama.cpp"
	// vLLM when its guided-decoding backend cannot take the schema.
	FlavorVLLM = "vllm"
	// LiteLLM proxying a provider that does not take response_format.
	FlavorLiteLLM = "litellm"
	// A FastAPI/pydantic server whose request model allows only text and
	// json_object (HTTP 422).
	FlavorPydantic = "pydantic"
)

// SchemaRejection is the error a server of flavor answers to a request
// with response_format json_schema, in that server's own words and shape.
// Use it with a ResponseFormatType("json_schema") rule.
func SchemaRejection(flavor string) Reply {
	switch flavor {
	case FlavorOpenAI:
		return Reply{Status: 400, ErrorMessage: "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model. " +
			"Learn more about supported models at the Structured Outputs guide: https://platform.openai.com/docs/guides/structured-outputs"}
	case FlavorLlamaCpp:
		return Reply{Status: 400, RawBody: `{"error":{"code":400,"message":"response_format type must be one of \"text\" or \"json_object\", but got: json_schema","type":"invalid_request_error"}}`,
			ContentType: "application/json; charset=utf-8"}
	case FlavorVLLM:
		return Reply{Status: 400, RawBody: `{"object":"error","message":"The provided JSON schema contains features not supported by xgrammar.","type":"BadRequestError","param":null,"code":400}`,
			ContentType: "application/json"}
	case FlavorLiteLLM:
		return Reply{Status: 400, RawBody: `{"error":{"message":"litellm.UnsupportedParamsError: ollama does not support parameters: ['response_format'], for model=llama3. To drop these, set ` +
			"`litellm.drop_params=True`" + ` or for proxy:\n\n` + "`litellm_settings:\\n drop_params: true`" + `\n","type":"None","param":null,"code":"400"}}`,
			ContentType: "application/json"}
	case FlavorPydantic:
		return Reply{Status: 422, RawBody: `{"detail":[{"type":"literal_error","loc":["body","response_format","type"],"msg":"Input should be 'text' or 'json_object'","input":"json_schema","ctx":{"expected":"'text' or 'json_object'"}}]}`,
			ContentType: "application/json"}
	}
	panic(fmt.Sprintf("judgetest.SchemaRejection: unknown flavor %q", flavor))
}
