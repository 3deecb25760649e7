package gateway

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

// updateGolden rewrites golden files instead of comparing against them:
// go test ./gateway/ -run TestX -update
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
func runStream(input []byte, tr streamTranslator) []byte {
	reader := sse.NewReader(bytes.NewReader(input), 1<<20)
	var out bytes.Buffer
	fail := func(e *apiError) []byte {
		out.Write(openAIFormat.streamError(nil, e))
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

// translateEvent runs one upstream event through tr and frames what it
// emits as an OpenAI client would receive it.
func translateEvent(tr streamTranslator, ev sse.Event) ([]byte, *apiError) {
	payloads, e := tr.event(ev, nil)
	return openAIFormat.framePayloads(nil, payloads), e
}

// translateFinish ends tr's stream as the pipeline does: its trailing
// payloads, then the format's terminator when the stream was complete.
func translateFinish(tr streamTranslator) ([]byte, *apiError) {
	payloads, e := tr.finish(nil)
	out := openAIFormat.framePayloads(nil, payloads)
	if e != nil {
		return out, e
	}
	return append(out, openAIFormat.streamEnd...), nil
}
