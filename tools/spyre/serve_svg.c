/* serve_svg.c: line-plot panels in SVG for spyre serve's reports: axes
 * with 1-2-5 ticks and their values, axis labels, a title and a legend. */
#include <math.h>
#include <stdio.h>

#include "serve.h"

enum { MARGIN_L = 70, MARGIN_R = 20, MARGIN_T = 30, MARGIN_B = 50 };

void sv_svg_begin(FILE *f, int width, int height)
{
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", width, height);
}

void sv_svg_end(FILE *f) { fprintf(f, "</svg>\n"); }

/* A tick step of 1, 2 or 5 times a power of ten giving about 5 ticks over span. */
static double tick_step(double span)
{
    double raw = span / 5, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void range(const sv_series *s, int ns, int y, double *lo, double *hi)
{
    *lo = 0, *hi = 0;
    for (int k = 0; k < ns; k++)
        for (int i = 0; i < s[k].n; i++) {
            double v = y ? s[k].y[i] : s[k].x[i];
            *lo = v < *lo ? v : *lo;
            *hi = v > *hi ? v : *hi;
        }
    if (*hi <= *lo)
        *hi = *lo + 1;
}

static void axis_ticks(FILE *f, int x0, int y0, int w, int h, double lo, double hi, int vertical)
{
    double step = tick_step(hi - lo);
    for (double v = ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
        double frac = (v - lo) / (hi - lo);
        if (vertical) {
            double y = y0 + h - frac * h;
            fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ccc\"/>\n", x0, y, x0 + w, y);
            fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", x0 - 5, y + 4, v);
        } else {
            double x = x0 + frac * w;
            fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ccc\"/>\n", x, y0, x, y0 + h);
            fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", x, y0 + h + 16, v);
        }
    }
}

void sv_svg_panel(FILE *f, int px, int py, int pw, int ph, const char *title, const char *xlabel, const char *ylabel,
                  const sv_series *s, int ns)
{
    int x0 = px + MARGIN_L, y0 = py + MARGIN_T, w = pw - MARGIN_L - MARGIN_R, h = ph - MARGIN_T - MARGIN_B;
    double xlo, xhi, ylo, yhi;
    range(s, ns, 0, &xlo, &xhi);
    range(s, ns, 1, &ylo, &yhi);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"14\">%s</text>\n", x0 + w / 2, py + 20, title);
    axis_ticks(f, x0, y0, w, h, xlo, xhi, 0);
    axis_ticks(f, x0, y0, w, h, ylo, yhi, 1);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"black\"/>\n", x0, y0, w, h);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x0 + w / 2, y0 + h + 36, xlabel);
    fprintf(f, "<text transform=\"translate(%d,%d) rotate(-90)\" text-anchor=\"middle\">%s</text>\n", px + 16,
            y0 + h / 2, ylabel);
    for (int k = 0; k < ns; k++) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", s[k].color);
        for (int i = 0; i < s[k].n; i++)
            fprintf(f, "%.1f,%.1f ", x0 + (s[k].x[i] - xlo) / (xhi - xlo) * w, y0 + h - (s[k].y[i] - ylo) / (yhi - ylo) * h);
        fprintf(f, "\"/>\n");
        fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"%s\">%s</text>\n", x0 + 8, y0 + 16 + 14 * k, s[k].color, s[k].name);
    }
}
