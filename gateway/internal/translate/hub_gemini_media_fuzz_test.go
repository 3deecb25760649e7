package translate

import (
	"encoding/json"
	"testing"
)

// FuzzGeminiImage drives both directions of images/generations on
// Imagen. A request is a 400 with a code, or an Imagen :predict body
// with the prompt, sampleCount ≥ 1 and one of the four aspect ratios; an
// answer is an error (4xx/5xx, no output), or the hub's image list with
// the created time and every non-empty image of the predictions, in
// order.
func FuzzGeminiImage(f *testing.F) {
	f.Add([]byte(`{"model":"imagen","prompt":"a cat","n":2,"size":"1792x1024","response_format":"b64_json"}`),
		[]byte(`{"predictions":[{"bytesBase64Encoded":"iVBORw0KGgo=","mimeType":"image/png"},{"raiFilteredReason":"x"}]}`))
	f.Add([]byte(`{"prompt":"x","size":"256x256"}`), []byte(`{"predictions":[]}`))
	f.Add([]byte(`{"prompt":" ","quality":"hd"}`), []byte(`{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}`))
	f.Add([]byte(`{"prompt":"x","n":1e1,"response_format":"url"}`), []byte(`not json`))
	f.Fuzz(func(t *testing.T, req, resp []byte) {
		out, e := GeminiImageRequest(req)
		if e != nil {
			if out != nil || e.Status != 400 || e.Code == "" || e.Message == "" {
				t.Fatalf("request error %+v with output %q", e, out)
			}
		} else {
			var p struct {
				Instances []struct {
					Prompt string `json:"prompt"`
				} `json:"instances"`
				Parameters struct {
					SampleCount int64  `json:"sampleCount"`
					AspectRatio string `json:"aspectRatio"`
				} `json:"parameters"`
			}
			var in struct {
				Prompt string `json:"prompt"`
			}
			_ = json.Unmarshal(req, &in)
			if err := json.Unmarshal(out, &p); err != nil || len(p.Instances) != 1 || p.Instances[0].Prompt != in.Prompt || p.Parameters.SampleCount < 1 {
				t.Fatalf("bad :predict body (%v): %s from %q", err, out, req)
			}
			switch p.Parameters.AspectRatio {
			case "1:1", "16:9", "9:16", "4:3", "3:4":
			default:
				t.Fatalf("aspect ratio %q", p.Parameters.AspectRatio)
			}
		}
		list, e := GeminiImageResponse(resp, 1700000000)
		if e != nil {
			if list != nil || e.Status < 400 || e.Status > 599 || e.Message == "" {
				t.Fatalf("response error %+v with output %q", e, list)
			}
			return
		}
		var got struct {
			Created int64 `json:"created"`
			Data    []struct {
				B64JSON string `json:"b64_json"`
			} `json:"data"`
		}
		var wire struct {
			Predictions []struct {
				Bytes *string `json:"bytesBase64Encoded"`
			} `json:"predictions"`
		}
		if json.Unmarshal(list, &got) != nil || json.Unmarshal(resp, &wire) != nil || got.Created != 1700000000 || len(got.Data) == 0 {
			t.Fatalf("bad image list %s from %q", list, resp)
		}
		j := 0
		for i := 0; i < len(wire.Predictions); i++ {
			if b := wire.Predictions[i].Bytes; b != nil && *b != "" {
				if j >= len(got.Data) || got.Data[j].B64JSON != *b {
					t.Fatalf("image %d is not prediction %d: %s from %q", j, i, list, resp)
				}
				j++
			}
		}
		if j != len(got.Data) {
			t.Fatalf("%d images for %d predictions with bytes", len(got.Data), j)
		}
	})
}
