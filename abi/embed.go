package abi

// MaxEmbedTexts is the most texts one EmbedRequest may carry: the answer
// is held whole in the host's and the guest's memory (a vector of a few
// thousand numbers a text), so its size is bounded by the request's
// length, not by the payload limit alone.
const MaxEmbedTexts = 2048

// EmbedRequest is the input of the anvil_embed host function (minor 5):
// texts to turn into vectors with the embedding model of a configured
// judge. It needs the judge capability and counts as one judge call, and
// its estimated tokens, against the invocation's judge budget.
type EmbedRequest struct {
	// Judge names a configured judge; empty means the metric's judge. The
	// judge's embedding_model answers.
	Judge string `json:"judge,omitempty"`
	// Texts to embed; at least one, at most MaxEmbedTexts.
	Texts []string `json:"texts"`
	// Purpose labels the call in accounting ("similarity").
	Purpose string `json:"purpose,omitempty"`
}

// EmbedResult is the output of anvil_embed: one vector per text, in
// order, all of one length; or Error, and no vectors. A request fails
// whole: a similarity over some of the texts is not the one asked for.
type EmbedResult struct {
	Vectors [][]float64 `json:"vectors"`
	Usage   Usage       `json:"usage"`
	Error   *Error      `json:"error,omitempty"`
}
