// Fixed-arity wrappers around the libvips calls EmojiArt uses.
//
// libvips' public API passes optional arguments as NULL-terminated varargs, which Swift cannot
// call. Each wrapper here fixes one argument list; the `cvips_` prefix keeps them apart from
// libvips' own names.
#ifndef EMOJIART_CVIPS_SHIM_H
#define EMOJIART_CVIPS_SHIM_H

#include <vips/vips.h>

static inline int cvips_init(const char *argv0) {
    return VIPS_INIT(argv0);
}

// From <vips/vector.h>, which <vips/vips.h> does not include (and which would pull in liborc's
// headers): switch libvips' SIMD on or off for the process, and say whether it is on. Before 8.15
// that is liborc's run-time compiled code; from 8.15 on, Highway's, compiled ahead of time.
void vips_vector_set_enabled(gboolean enabled);
gboolean vips_vector_isenabled(void);

/// Opens an encoded image lazily: only the header is read until pixels are asked for.
/// `option_string` carries loader options such as "fail_on=truncated".
static inline VipsImage *cvips_image_new_from_buffer(const void *buf, size_t len, const char *option_string) {
    return vips_image_new_from_buffer(buf, len, option_string, "access", VIPS_ACCESS_SEQUENTIAL, NULL);
}

/// Shrink-on-load thumbnail that fits inside width x height and never upscales.
static inline int cvips_thumbnail_buffer(void *buf, size_t len, VipsImage **out, int width, int height,
                                          const char *option_string) {
    return vips_thumbnail_buffer(buf, len, out, width,
                                 "height", height,
                                 "size", VIPS_SIZE_DOWN,
                                 "option_string", option_string,
                                 NULL);
}

/// Lanczos-3 resize by separate horizontal and vertical scales.
static inline int cvips_resize(VipsImage *in, VipsImage **out, double hscale, double vscale) {
    return vips_resize(in, out, hscale, "vscale", vscale, "kernel", VIPS_KERNEL_LANCZOS3, NULL);
}

/// A thumbnail of an image in memory that fits inside width x height, never upscaled.
static inline int cvips_thumbnail_image(VipsImage *in, VipsImage **out, int width, int height) {
    return vips_thumbnail_image(in, out, width, "height", height, "size", VIPS_SIZE_DOWN, NULL);
}

/// Multiplies colour by alpha (the result is float).
static inline int cvips_premultiply(VipsImage *in, VipsImage **out) {
    return vips_premultiply(in, out, NULL);
}

/// Divides colour by alpha (the result is float).
static inline int cvips_unpremultiply(VipsImage *in, VipsImage **out) {
    return vips_unpremultiply(in, out, NULL);
}

/// Decodes every pixel now, into memory owned by the new image.
static inline int cvips_copy_memory(VipsImage *in, VipsImage **out) {
    *out = vips_image_copy_memory(in);
    return *out ? 0 : -1;
}

/// The mean of |a - b| over every pixel and band; with alpha, of the premultiplied values (what
/// is seen: the colour of a nearly transparent pixel hardly matters).
static inline int cvips_mean_abs_difference(VipsImage *a, VipsImage *b, double *out) {
    VipsImage *pa = NULL, *pb = NULL, *difference = NULL, *magnitude = NULL;
    int status = 0;
    if (vips_image_hasalpha(a)) {
        status = vips_premultiply(a, &pa, NULL);
        if (status == 0) status = vips_premultiply(b, &pb, NULL);
    } else {
        pa = a; g_object_ref(a);
        pb = b; g_object_ref(b);
    }
    if (status == 0) status = vips_subtract(pa, pb, &difference, NULL);
    if (status == 0) status = vips_abs(difference, &magnitude, NULL);
    if (status == 0) status = vips_avg(magnitude, out, NULL);
    if (magnitude) g_object_unref(magnitude);
    if (difference) g_object_unref(difference);
    if (pb) g_object_unref(pb);
    if (pa) g_object_unref(pa);
    return status;
}

/// `filter` is a VipsForeignPngFilter: VIPS_FOREIGN_PNG_FILTER_NONE, _SUB, ...
static inline int cvips_pngsave_buffer(VipsImage *in, void **buf, size_t *len, int compression, int filter) {
    return vips_pngsave_buffer(in, buf, len, "compression", compression, "filter", filter, "strip", TRUE, NULL);
}

/// Lossy WebP; `sharp_yuv` turns on libwebp's sharp (smart) RGB to YUV conversion.
static inline int cvips_webpsave_buffer(VipsImage *in, void **buf, size_t *len, int quality, int sharp_yuv) {
    return vips_webpsave_buffer(in, buf, len, "Q", quality, "smart_subsample", sharp_yuv ? TRUE : FALSE, "strip", TRUE, NULL);
}

/// AVIF: AV1 in HEIF, 8 bits, 4:2:0 chroma unless `quality` is high. `effort` 0 (fastest) to 9.
static inline int cvips_avifsave_buffer(VipsImage *in, void **buf, size_t *len, int quality, int effort) {
    return vips_heifsave_buffer(in, buf, len, "Q", quality, "compression", VIPS_FOREIGN_HEIF_COMPRESSION_AV1,
                                "effort", effort, "bitdepth", 8, "subsample_mode", VIPS_FOREIGN_SUBSAMPLE_OFF, "strip", TRUE, NULL);
}

static inline int cvips_jpegsave_buffer(VipsImage *in, void **buf, size_t *len, int quality) {
    return vips_jpegsave_buffer(in, buf, len, "Q", quality, "strip", TRUE, NULL);
}

/// Renders text, colour glyphs included, to an RGBA image.
static inline int cvips_text_rgba(VipsImage **out, const char *text, const char *font, int dpi) {
    return vips_text(out, text, "font", font, "rgba", TRUE, "dpi", dpi, "align", VIPS_ALIGN_CENTRE, NULL);
}

/// A two-band image whose pixels hold their own x and y coordinates.
static inline int cvips_xyz(VipsImage **out, int width, int height) {
    return vips_xyz(out, width, height, NULL);
}

/// out = in * a + b; with n > 1 constants and a one-band input, the result has n bands.
static inline int cvips_linear(VipsImage *in, VipsImage **out, const double *a, const double *b, int n) {
    return vips_linear(in, out, a, b, n, NULL);
}

static inline int cvips_bandmean(VipsImage *in, VipsImage **out) {
    return vips_bandmean(in, out, NULL);
}

static inline int cvips_cast_uchar(VipsImage *in, VipsImage **out) {
    return vips_cast(in, out, VIPS_FORMAT_UCHAR, NULL);
}

static inline int cvips_composite2_over(VipsImage *base, VipsImage *overlay, VipsImage **out, int x, int y) {
    return vips_composite2(base, overlay, out, VIPS_BLEND_MODE_OVER, "x", x, "y", y, NULL);
}

static inline int cvips_extract_band(VipsImage *in, VipsImage **out, int band, int n) {
    return vips_extract_band(in, out, band, "n", n, NULL);
}

/// Reads one pixel's band values into `vector` (freed with g_free).
static inline int cvips_getpoint(VipsImage *in, double **vector, int *n, int x, int y) {
    return vips_getpoint(in, vector, n, x, y, NULL);
}

// Processing steps (Imaging+Process.swift): each takes one image and makes another.

/// Shrink-on-load thumbnail to exactly width x height (size FORCE: the caller computed the
/// size), rotated upright by its EXIF orientation unless `no_rotate`.
static inline int cvips_thumbnail_buffer_exact(void *buf, size_t len, VipsImage **out, int width, int height,
                                               int no_rotate, const char *option_string) {
    return vips_thumbnail_buffer(buf, len, out, width, "height", height, "size", VIPS_SIZE_FORCE,
                                 "no_rotate", no_rotate ? TRUE : FALSE, "option_string", option_string, NULL);
}

/// A thumbnail of an image in memory at exactly width x height, not rotated.
static inline int cvips_thumbnail_image_exact(VipsImage *in, VipsImage **out, int width, int height) {
    return vips_thumbnail_image(in, out, width, "height", height, "size", VIPS_SIZE_FORCE, "no_rotate", TRUE, NULL);
}

/// Turns the image upright by its EXIF orientation (flips included) and removes the tag.
static inline int cvips_autorot(VipsImage *in, VipsImage **out) {
    return vips_autorot(in, out, NULL);
}

/// `angle` is a VipsAngle: VIPS_ANGLE_D90 (clockwise), _D180, _D270.
static inline int cvips_rot(VipsImage *in, VipsImage **out, VipsAngle angle) {
    return vips_rot(in, out, angle, NULL);
}

static inline int cvips_extract_area(VipsImage *in, VipsImage **out, int left, int top, int width, int height) {
    return vips_extract_area(in, out, left, top, width, height, NULL);
}

/// Crops to width x height around the part libvips' attention strategy finds interesting.
static inline int cvips_smartcrop_attention(VipsImage *in, VipsImage **out, int width, int height) {
    return vips_smartcrop(in, out, width, height, "interesting", VIPS_INTERESTING_ATTENTION, NULL);
}

/// Places the image at (x, y) on a width x height canvas of transparent black (alpha added if
/// the image has none).
static inline int cvips_embed_transparent(VipsImage *in, VipsImage **out, int x, int y, int width, int height) {
    VipsImage *alpha = NULL;
    int status;
    if (vips_image_hasalpha(in)) {
        alpha = in; g_object_ref(in);
        status = 0;
    } else {
        status = vips_addalpha(in, &alpha, NULL);
    }
    if (status == 0) status = vips_embed(alpha, out, x, y, width, height, "extend", VIPS_EXTEND_BLACK, NULL);
    if (alpha) g_object_unref(alpha);
    return status;
}

/// Blends the image over a solid colour (`rgb`, three values 0...255) and drops alpha.
static inline int cvips_flatten(VipsImage *in, VipsImage **out, const double *rgb) {
    VipsArrayDouble *background = vips_array_double_new(rgb, 3);
    int status = vips_flatten(in, out, "background", background, NULL);
    vips_area_unref(VIPS_AREA(background));
    return status;
}

static inline int cvips_srgb(VipsImage *in, VipsImage **out) {
    return vips_colourspace(in, out, VIPS_INTERPRETATION_sRGB, NULL);
}

static inline int cvips_gaussblur(VipsImage *in, VipsImage **out, double sigma) {
    return vips_gaussblur(in, out, sigma, NULL);
}

static inline int cvips_sharpen(VipsImage *in, VipsImage **out, double sigma) {
    return vips_sharpen(in, out, "sigma", sigma, NULL);
}

// Savers with a quality and metadata stripped (`strip` non-zero) or kept.

static inline int cvips_jpegsave_buffer_q(VipsImage *in, void **buf, size_t *len, int quality, int strip) {
    return vips_jpegsave_buffer(in, buf, len, "Q", quality, "strip", strip ? TRUE : FALSE, NULL);
}

static inline int cvips_pngsave_buffer_s(VipsImage *in, void **buf, size_t *len, int strip) {
    return vips_pngsave_buffer(in, buf, len, "strip", strip ? TRUE : FALSE, NULL);
}

static inline int cvips_webpsave_buffer_q(VipsImage *in, void **buf, size_t *len, int quality, int strip) {
    return vips_webpsave_buffer(in, buf, len, "Q", quality, "strip", strip ? TRUE : FALSE, NULL);
}

/// AVIF: AV1 in HEIF, 8 bits, at `effort` 0 (fastest) to 9.
static inline int cvips_avifsave_buffer_q(VipsImage *in, void **buf, size_t *len, int quality, int effort, int strip) {
    return vips_heifsave_buffer(in, buf, len, "Q", quality, "compression", VIPS_FOREIGN_HEIF_COMPRESSION_AV1,
                                "effort", effort, "bitdepth", 8, "strip", strip ? TRUE : FALSE, NULL);
}

static inline int cvips_gifsave_buffer_s(VipsImage *in, void **buf, size_t *len, int strip) {
    return vips_gifsave_buffer(in, buf, len, "strip", strip ? TRUE : FALSE, NULL);
}

static inline void cvips_unref(VipsImage *image) {
    if (image) g_object_unref(image);
}

static inline void cvips_free(void *p) {
    g_free(p);
}

/// When one evaluation must stop: a deadline on GLib's monotonic clock (microseconds) and a flag
/// another thread may set (`g_atomic_int_set`). Owned by the caller (Imaging.Stop); it must
/// outlive every image watched with it.
typedef struct {
    gint64 deadline;
    gint cancelled;
} CVipsStop;

/// libvips' "eval" signal handler: marks the image killed once the stop's deadline has passed or
/// its flag is set; libvips then ends the computation with an error ("killed").
static void cvips_stop_check(VipsImage *image, void *progress, void *data) {
    CVipsStop *stop = (CVipsStop *)data;
    (void)progress;
    if (g_atomic_int_get(&stop->cancelled) || g_get_monotonic_time() > stop->deadline) {
        vips_image_set_kill(image, TRUE);
    }
}

/// Reports `image`'s evaluation to `stop`'s check as it goes (every few scanlines).
static inline void cvips_watch(VipsImage *image, CVipsStop *stop) {
    vips_image_set_progress(image, TRUE);
    g_signal_connect(image, "eval", G_CALLBACK(cvips_stop_check), stop);
}

/// GLib's monotonic clock, in microseconds.
static inline gint64 cvips_monotonic_now(void) {
    return g_get_monotonic_time();
}

static inline void cvips_stop_cancel(CVipsStop *stop) {
    g_atomic_int_set(&stop->cancelled, 1);
}

static inline int cvips_stop_is_cancelled(CVipsStop *stop) {
    return g_atomic_int_get(&stop->cancelled);
}

#endif
