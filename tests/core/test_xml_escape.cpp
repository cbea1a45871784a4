#include <catch2/catch.hpp>

#include "core/xml_escape.hpp"

using namespace clustersim;

TEST_CASE("the five characters XML reserves become their predefined entities") {
  CHECK(xml_escape("&") == "&amp;");
  CHECK(xml_escape("<") == "&lt;");
  CHECK(xml_escape(">") == "&gt;");
  CHECK(xml_escape("\"") == "&quot;");
  CHECK(xml_escape("'") == "&apos;");
  CHECK(xml_escape("a<b & c>'d\"") == "a&lt;b &amp; c&gt;&apos;d&quot;");
  // An ampersand that already starts an entity is escaped again: the input is text, not XML.
  CHECK(xml_escape("&amp;") == "&amp;amp;");
}

TEST_CASE("control characters XML forbids become spaces, while tab, newlines and UTF-8 stay") {
  CHECK(xml_escape(std::string("a\x01z\x1f", 4)) == "a z ");
  CHECK(xml_escape(std::string("x\0y", 3)) == "x y");
  CHECK(xml_escape("a\tb\nc\rd") == "a\tb\nc\rd");
  CHECK(xml_escape("5 \xC2\xB5s") == "5 \xC2\xB5s");  // "5 µs"
  CHECK(xml_escape("") == "");
}
