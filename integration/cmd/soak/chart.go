package main

import (
	"fmt"
	"image/color"
	"os"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var (
	seriesColor  = color.NRGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	heapColor    = color.NRGBA{R: 0x9e, G: 0xc6, B: 0xe3, A: 0xff}
	trendColor   = color.NRGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	redisColor   = color.NRGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xa0}
	usersColor   = color.NRGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xa0}
	warmupColor  = color.NRGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}
	chartWidth   = 10 * vg.Inch
	chartHeight  = 9 * vg.Inch
	panelPadding = 4 * vg.Millimeter
)

// drawChart draws RSS (with heap in use), goroutines (or threads) and
// open FDs over the run, one panel each, with the Redis restarts and
// users-file edits as vertical lines, the end of the warm-up dashed and
// the fitted trend over the judged window.
func drawChart(path string, rec *recorder, v verdict, elapsed time.Duration, haveGoroutines bool) error {
	gName := "goroutines"
	if !haveGoroutines {
		gName = "threads"
	}
	panels := []struct {
		title string
		value func(sample) float64
		extra func(sample) float64 // a second, lighter series, or nil
		trend string
	}{
		{"RSS (MiB; light: heap in use)", func(s sample) float64 { return s.rssMiB }, nil, "RSS"},
		{gName, func(s sample) float64 {
			if haveGoroutines {
				return float64(s.goroutines)
			}
			return float64(s.threads)
		}, nil, gName},
		{"open file descriptors", func(s sample) float64 { return float64(s.fds) }, nil, ""},
	}
	if haveGoroutines {
		panels[0].extra = func(s sample) float64 { return s.heapMiB }
	}
	rec.mu.Lock()
	faults := append([]fault(nil), rec.faults...)
	rec.mu.Unlock()

	var plots [][]*plot.Plot
	for i, pn := range panels {
		p := plot.New()
		p.Y.Label.Text = pn.title
		p.Y.Min = 0
		if i == 0 {
			p.Title.Text = fmt.Sprintf("llmgateway soak: %s of mixed traffic (%d requests), Redis restarts (orange), users-file edits (green)",
				elapsed.Round(time.Second), lastRequests(rec.samples))
		}
		if i == len(panels)-1 {
			p.X.Label.Text = "minutes"
		}
		top := 0.0
		add := func(f func(sample) float64, c color.Color) error {
			pts := make(plotter.XYs, 0, len(rec.samples))
			for _, s := range rec.samples {
				y := f(s)
				pts = append(pts, plotter.XY{X: s.at.Minutes(), Y: y})
				if y > top {
					top = y
				}
			}
			line, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			line.Color = c
			line.Width = vg.Points(1.5)
			p.Add(line)
			return nil
		}
		if pn.extra != nil {
			if err := add(pn.extra, heapColor); err != nil {
				return err
			}
		}
		if err := add(pn.value, seriesColor); err != nil {
			return err
		}
		top *= 1.15
		if top == 0 {
			top = 1
		}
		p.Y.Max = top
		for _, f := range faults {
			c := usersColor
			if f.name == "redis-restart" {
				c = redisColor
			}
			if err := vline(p, f.at.Minutes(), top, c, false); err != nil {
				return err
			}
		}
		if len(v.trends) > 0 {
			if err := vline(p, v.trends[0].fromMin, top, warmupColor, true); err != nil {
				return err
			}
		}
		for _, t := range v.trends {
			if t.name != pn.trend {
				continue
			}
			line, err := plotter.NewLine(plotter.XYs{
				{X: t.fromMin, Y: t.intercept + t.slope*t.fromMin},
				{X: t.toMin, Y: t.intercept + t.slope*t.toMin},
			})
			if err != nil {
				return err
			}
			line.Color = trendColor
			line.Width = vg.Points(2)
			p.Add(line)
			p.Legend.Add(fmt.Sprintf("trend %+.2f/min: %s", t.slope, map[bool]string{true: "GROWING", false: "flat"}[t.failed]), line)
			p.Legend.Top = false
			p.Legend.Left = true
		}
		plots = append(plots, []*plot.Plot{p})
	}

	img := vgimg.New(chartWidth, chartHeight)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadX: panelPadding, PadY: panelPadding,
		PadTop: panelPadding, PadBottom: panelPadding, PadLeft: panelPadding, PadRight: panelPadding}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// vline draws a vertical line at x from 0 to top.
func vline(p *plot.Plot, x, top float64, c color.Color, dashed bool) error {
	line, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: top}})
	if err != nil {
		return err
	}
	line.Color = c
	line.Width = vg.Points(1)
	if dashed {
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(line)
	return nil
}

func lastRequests(samples []sample) int64 {
	if len(samples) == 0 {
		return 0
	}
	return samples[len(samples)-1].requests
}
