public import Imaging

extension PlanProcessor {
    /// The libvips steps that make `plan`'s result from a source `source` describes, with
    /// imgproxy's rules (its `processing/` pipeline: prepare, crop, scale, rotate, crop to the
    /// result, filters, extend, flatten), sizes worked out from the header alone.
    ///
    /// Sizes are meant for the image as it is shown: turned upright by its EXIF orientation
    /// (when `autoRotate`) and then by ``ProcessingPlan/rotate``. Without a `crop` the resize is
    /// the first step (after auto-rotation), so libvips shrinks on load; with one, the source is
    /// turned, cut, then resized.
    /// - Parameters:
    ///   - plan: the processing asked for.
    ///   - source: the source's header (``PlanProcessor/process(_:)`` probes it before anything is decoded).
    ///   - autoRotate: the plan's ``ProcessingPlan/autoRotate``, its default resolved.
    ///   - flattensAlpha: whether the output format cannot hold alpha (JPEG): alpha is then
    ///     flattened over the background, white when the plan sets none (imgproxy's default).
    public static func operations(
        for plan: ProcessingPlan, source: ImageInfo, autoRotate: Bool, flattensAlpha: Bool
    ) -> [Imaging.Operation] {
        let turnsSides = plan.rotate % 180 == 90
        let swapsSides = (autoRotate && source.orientationSwapsSides) != turnsSides
        let (sourceWidth, sourceHeight) = swapsSides ? (source.height, source.width) : (source.width, source.height)
        let crop = plan.crop.map { (width: cropSize(sourceWidth, $0.width), height: cropSize(sourceHeight, $0.height)) }
        let widthToScale = minNonZero(crop?.width ?? 0, sourceWidth)
        let heightToScale = minNonZero(crop?.height ?? 0, sourceHeight)
        let scale = Scale(plan, width: widthToScale, height: heightToScale)
        let scaledWidth = max(1, scaled(widthToScale, by: scale.width))
        let scaledHeight = max(1, scaled(heightToScale, by: scale.height))
        let resizes = scaledWidth != widthToScale || scaledHeight != heightToScale

        var steps: [Imaging.Operation] = autoRotate ? [.autoRotate] : []
        if let crop, let area = cut(sourceWidth, sourceHeight, to: crop, gravity: plan.crop?.gravity ?? plan.gravity, offsetScale: 1) {
            if plan.rotate != 0 { steps.append(.rotate(degrees: plan.rotate)) }
            steps.append(area)
            if resizes { steps.append(.resize(width: scaledWidth, height: scaledHeight)) }
        } else {
            // Resized before the plan's rotation, so on load: the size is the unturned one.
            if resizes { steps.append(turnsSides ? .resize(width: scaledHeight, height: scaledWidth) : .resize(width: scaledWidth, height: scaledHeight)) }
            if plan.rotate != 0 { steps.append(.rotate(degrees: plan.rotate)) }
        }

        let targetWidth = scaled(plan.width, by: scale.dpr)
        let targetHeight = scaled(plan.height, by: scale.dpr)
        let result = resultCrop(plan, target: (targetWidth, targetHeight), scaled: (scaledWidth, scaledHeight))
        var (width, height) = (scaledWidth, scaledHeight)
        if let area = cut(width, height, to: result, gravity: plan.gravity, offsetScale: scale.dpr) {
            steps.append(area)
            switch area {
            case let .crop(_, _, cutWidth, cutHeight), let .smartCrop(cutWidth, cutHeight): (width, height) = (cutWidth, cutHeight)
            default: break
            }
        }
        if let blur = plan.blur, blur > 0 { steps.append(.blur(sigma: blur)) }
        if let sharpen = plan.sharpen, sharpen > 0 { steps.append(.sharpen(sigma: sharpen)) }
        var extended = false
        if plan.extend.enabled, targetWidth > width || targetHeight > height {
            // A side the plan leaves at 0, or one already longer, keeps the image's own length.
            let canvasWidth = max(targetWidth, width)
            let canvasHeight = max(targetHeight, height)
            let (x, y) = position(
                outer: (canvasWidth, canvasHeight), inner: (width, height), gravity: plan.extend.gravity, offsetScale: scale.dpr)
            steps.append(.extend(x: x, y: y, width: canvasWidth, height: canvasHeight))
            extended = true
        }
        if let background = plan.background {
            steps.append(.flatten(red: background.red, green: background.green, blue: background.blue))
        } else if flattensAlpha, source.hasAlpha || extended {
            steps.append(.flatten(red: 255, green: 255, blue: 255))
        }
        return steps
    }

    /// imgproxy's scale: the factors from the size to scale to the result (fit, fill, fill-down,
    /// force, auto; 0 meaning from the aspect ratio), `enlarge` off capping them at 1 (then the
    /// dpr is capped as well), and the dpr applied.
    struct Scale {
        var width: Double
        var height: Double
        /// The dpr actually applied to the result's size: the plan's, less when enlarging is off
        /// and the source is too small for it.
        var dpr: Double

        init(_ plan: ProcessingPlan, width sourceWidth: Int, height sourceHeight: Int) {
            let sourceWidth = Double(sourceWidth), sourceHeight = Double(sourceHeight)
            let width = plan.width == 0 ? sourceWidth : Double(plan.width)
            let height = plan.height == 0 ? sourceHeight : Double(plan.height)
            var widthShrink = width == sourceWidth ? 1 : sourceWidth / width
            var heightShrink = height == sourceHeight ? 1 : sourceHeight / height
            if widthShrink != 1 || heightShrink != 1 {
                var type = plan.resizingType
                if type == .auto {
                    // Same orientation (a square counts as landscape): fill, else fit.
                    type = (sourceWidth >= sourceHeight) == (width >= height) ? .fill : .fit
                }
                switch type {
                case _ where plan.width == 0 && type != .force: widthShrink = heightShrink
                case _ where plan.height == 0 && type != .force: heightShrink = widthShrink
                case .fit: widthShrink = max(widthShrink, heightShrink); heightShrink = widthShrink
                case .fill, .fillDown: widthShrink = min(widthShrink, heightShrink); heightShrink = widthShrink
                case .force, .auto: break
                }
            }
            var dpr = plan.dpr
            if !plan.enlarge {
                let smaller = min(widthShrink, heightShrink)
                if smaller < 1 {
                    widthShrink /= smaller
                    heightShrink /= smaller
                    if !plan.extend.enabled { dpr /= smaller }
                }
                // No more dpr than the source has pixels for.
                dpr = min(dpr, widthShrink, heightShrink)
            }
            widthShrink = min(widthShrink / dpr, sourceWidth)
            heightShrink = min(heightShrink / dpr, sourceHeight)
            self.width = 1 / widthShrink
            self.height = 1 / heightShrink
            self.dpr = dpr
        }
    }

    /// The size of the area cut from the scaled image: the target's, or for `fill-down` without
    /// enlarging, the largest area of the target's aspect ratio the scaled image holds.
    static func resultCrop(_ plan: ProcessingPlan, target: (Int, Int), scaled: (Int, Int)) -> (width: Int, height: Int) {
        guard plan.resizingType == .fillDown, !plan.enlarge, target.0 > 0, target.1 > 0 else { return target }
        let widthRatio = Double(target.0) / Double(scaled.0)
        let heightRatio = Double(target.1) / Double(scaled.1)
        if widthRatio > heightRatio, widthRatio > 1 {
            return (scaled.0, self.scaled(scaled.0, by: Double(target.1) / Double(target.0)))
        }
        if heightRatio > widthRatio, heightRatio > 1 {
            return (self.scaled(scaled.1, by: Double(target.0) / Double(target.1)), scaled.1)
        }
        return target
    }

    /// The step that cuts `size` out of an image of `width` x `height` at `gravity`, or nil
    /// when nothing is cut (a side of 0 is the image's; sides are capped at the image's).
    static func cut(
        _ width: Int, _ height: Int, to size: (width: Int, height: Int), gravity: Gravity, offsetScale: Double
    ) -> Imaging.Operation? {
        guard size.width != 0 || size.height != 0 else { return nil }
        let innerWidth = min(minNonZero(size.width, width), width)
        let innerHeight = min(minNonZero(size.height, height), height)
        guard innerWidth < width || innerHeight < height else { return nil }
        if gravity.kind == .smart { return .smartCrop(width: innerWidth, height: innerHeight) }
        let (x, y) = position(outer: (width, height), inner: (innerWidth, innerHeight), gravity: gravity, offsetScale: offsetScale)
        return .crop(x: x, y: y, width: innerWidth, height: innerHeight)
    }

    /// Where an `inner` area sits in an `outer` one at `gravity`: imgproxy's position, with
    /// offsets (pixels times `offsetScale`, the dpr; or fractions of `outer` below 1) pushing
    /// away from the gravity's edge, and a focus point centred where it can be; kept inside
    /// `outer`.
    static func position(
        outer: (width: Int, height: Int), inner: (width: Int, height: Int), gravity: Gravity, offsetScale: Double
    ) -> (x: Int, y: Int) {
        var x: Int, y: Int
        if gravity.kind == .focusPoint {
            x = scaledToEven(outer.width, by: gravity.x) - inner.width / 2
            y = scaledToEven(outer.height, by: gravity.y) - inner.height / 2
        } else {
            // An offset of 1 or more is pixels (times the dpr); below 1, a fraction of the outer side.
            func offset(_ value: Double, _ side: Int) -> Int {
                abs(value) >= 1 ? Int((value * offsetScale).rounded(.toNearestOrEven)) : scaledToEven(side, by: value)
            }
            let offsetX = offset(gravity.x, outer.width)
            let offsetY = offset(gravity.y, outer.height)
            x = scaledToEven(outer.width - inner.width + 1, by: 0.5) + offsetX
            y = scaledToEven(outer.height - inner.height + 1, by: 0.5) + offsetY
            switch gravity.kind {
            case .north, .northEast, .northWest: y = offsetY
            case .south, .southEast, .southWest: y = outer.height - inner.height - offsetY
            default: break
            }
            switch gravity.kind {
            case .west, .northWest, .southWest: x = offsetX
            case .east, .northEast, .southEast: x = outer.width - inner.width - offsetX
            default: break
            }
        }
        return (max(0, min(x, outer.width - inner.width)), max(0, min(y, outer.height - inner.height)))
    }

    /// imgproxy's crop size: 0 for none, pixels from 1 up, a fraction of `length` below 1.
    static func cropSize(_ length: Int, _ crop: Double) -> Int {
        if crop == 0 { return 0 }
        if crop >= 1 { return Int(crop) }
        return max(1, scaled(length, by: crop))
    }

    static func minNonZero(_ a: Int, _ b: Int) -> Int {
        a == 0 ? b : b == 0 ? a : min(a, b)
    }

    /// `length` times `factor`, rounded half away from zero (0 stays 0).
    static func scaled(_ length: Int, by factor: Double) -> Int {
        Int((Double(length) * factor).rounded())
    }

    static func scaledToEven(_ length: Int, by factor: Double) -> Int {
        Int((Double(length) * factor).rounded(.toNearestOrEven))
    }
}
