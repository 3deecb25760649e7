package translate

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

// updateGolden rewrites golden files instead of comparing against them:
// go test ./gateway/internal/translate/ -run TestX -update
var updateGolden = flag.Bool("update", false, "rewrite golden files")

// checkGolden compares got with the golden file at path (relative to the
// package directory), or rewrites the file when -update is set.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// runStream feeds an upstream transcript through sse.NewReader and a
// stream translator the way the pipeline does, returning exactly what the
// client would receive (an error framed as the OpenAI format's
// mid-stream error).
func runStream(input []byte, tr StreamTranslator) []byte {
	reader := sse.NewReader(bytes.NewReader(input), 1<<20)
	var out bytes.Buffer
	fail := func(e *apierr.Error) []byte {
		out.Write(sse.AppendData(nil, testErrorJSON(e)))
		return out.Bytes()
	}
	for {
		ev, err := reader.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail(apierr.New(502, "server_error", "upstream_stream_interrupted", err.Error()))
		}
		chunk, e := translateEvent(tr, ev)
		out.Write(chunk)
		if e != nil {
			return fail(e)
		}
	}
	tail, e := translateFinish(tr)
	out.Write(tail)
	if e != nil {
		return fail(e)
	}
	return out.Bytes()
}

// testdataSeeds reads the files matching glob (relative to testdata/) as
// fuzz seeds.
func testdataSeeds(f *testing.F, glob string) [][]byte {
	f.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", glob))
	if err != nil {
		f.Fatal(err)
	}
	var seeds [][]byte
	for i := 0; i < len(paths); i++ {
		data, err := os.ReadFile(paths[i])
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, data)
	}
	return seeds
}

// The client side of these tests is OpenAI's stream framing, as the
// gateway's openai wire format writes it: each payload an unnamed
// "data: <json>" event, "data: [DONE]" after a clean end, and a
// mid-stream error as a data event holding the error envelope.

// doneEvent is OpenAI's stream terminator.
var doneEvent = []byte("data: [DONE]\n\n")

// testErrorJSON is e in the OpenAI error envelope as a mid-stream error
// carries it (no upstream body).
func testErrorJSON(e *apierr.Error) []byte {
	var body struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    string  `json:"code"`
		} `json:"error"`
	}
	body.Error.Message, body.Error.Type, body.Error.Code = e.Message, e.Kind, e.Code
	data, err := json.Marshal(&body)
	if err != nil {
		panic(err)
	}
	return data
}

// framePayloads frames payloads as OpenAI data events, appended to dst.
func framePayloads(dst []byte, payloads []Payload) []byte {
	for i := 0; i < len(payloads); i++ {
		dst = sse.AppendData(dst, payloads[i].Data)
	}
	return dst
}

// translateEvent runs one upstream event through tr and frames what it
// emits as an OpenAI client would receive it.
func translateEvent(tr StreamTranslator, ev sse.Event) ([]byte, *apierr.Error) {
	payloads, e := tr.Event(ev, nil)
	return framePayloads(nil, payloads), e
}

// translateFinish ends tr's stream as the pipeline does: its trailing
// payloads, then the terminator when the stream was complete.
func translateFinish(tr StreamTranslator) ([]byte, *apierr.Error) {
	payloads, e := tr.Finish(nil)
	out := framePayloads(nil, payloads)
	if e != nil {
		return out, e
	}
	return append(out, doneEvent...), nil
}
