// Text made safe to place in XML (SVG plots, JUnit reports), as element content or inside a
// quoted attribute value.
#pragma once

#include <string>
#include <string_view>

namespace clustersim {

// `text` with the five characters XML reserves replaced by their predefined entities (XML 1.0
// section 4.6: &amp; &lt; &gt; &quot; &apos;) and every control character that XML 1.0 does not
// allow (below 0x20 except tab, line feed and carriage return; section 2.2, Char) replaced by a
// space. Other bytes, UTF-8 sequences included, are copied unchanged.
std::string xml_escape(std::string_view text);

}  // namespace clustersim
