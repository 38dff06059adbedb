/// `text` with every control character (tab, newline, escape, DEL, C1 controls) written as an
/// escape like `\u{1B}`, so that a value can't forge a line or a column of a tool's output, or
/// move a terminal's cursor.
public func printable(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: isControl) else { return text }
    var result = ""
    for scalar in text.unicodeScalars {
        if isControl(scalar) {
            result += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
        } else {
            result.unicodeScalars.append(scalar)
        }
    }
    return result
}

private func isControl(_ scalar: Unicode.Scalar) -> Bool { scalar.properties.generalCategory == .control }
