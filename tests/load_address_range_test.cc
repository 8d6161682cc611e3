// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <wheel/load/address_range.h>

#include <stdexcept>

using wheel::load::format_ipv4;
using wheel::load::parse_ipv4;
using wheel::load::parse_source_addresses;

TEST(LoadAddressRange, ParsesDottedQuadInHostOrder) {
  EXPECT_EQ(parse_ipv4("127.0.0.1"), 0x7f000001u);
  EXPECT_EQ(parse_ipv4("255.255.255.255"), 0xffffffffu);
  EXPECT_EQ(format_ipv4(0x7f000108u), "127.0.1.8");
}

TEST(LoadAddressRange, RejectsMalformedAddresses) {
  for (const char* bad : {"", "127.0.0", "127.0.0.1.2", "256.0.0.1", "127.0.0.-1", "127..0.1",
                          "127.0.0.1 x", "a.b.c.d", "1270.0.0.1", "+1.0.0.1"}) {
    EXPECT_THROW(parse_ipv4(bad), std::invalid_argument) << bad;
  }
}

TEST(LoadAddressRange, ExpandsInclusiveRange) {
  const auto a = parse_source_addresses("127.0.0.1-127.0.0.8");
  ASSERT_EQ(a.size(), 8u);
  EXPECT_EQ(a.front(), 0x7f000001u);
  EXPECT_EQ(a.back(), 0x7f000008u);
}

TEST(LoadAddressRange, RangeCrossesOctetBoundary) {
  const auto a = parse_source_addresses("127.0.0.254-127.0.1.1");
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(format_ipv4(a[2]), "127.0.1.0");
}

TEST(LoadAddressRange, SingleAddressAndCommaListKeepOrder) {
  EXPECT_EQ(parse_source_addresses("127.0.0.5").size(), 1u);
  const auto a = parse_source_addresses("127.0.0.3, 127.0.0.1-127.0.0.2,127.0.0.9");
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(format_ipv4(a[0]), "127.0.0.3");
  EXPECT_EQ(format_ipv4(a[1]), "127.0.0.1");
  EXPECT_EQ(format_ipv4(a[3]), "127.0.0.9");
}

TEST(LoadAddressRange, RangeOfOneAddress) {
  EXPECT_EQ(parse_source_addresses("127.0.0.7-127.0.0.7").size(), 1u);
}

TEST(LoadAddressRange, RejectsBackwardsEmptyAndHugeLists) {
  EXPECT_THROW(parse_source_addresses("127.0.0.8-127.0.0.1"), std::invalid_argument);
  EXPECT_THROW(parse_source_addresses(""), std::invalid_argument);
  EXPECT_THROW(parse_source_addresses("127.0.0.1,,127.0.0.2"), std::invalid_argument);
  EXPECT_THROW(parse_source_addresses("127.0.0.1,"), std::invalid_argument);
  EXPECT_THROW(parse_source_addresses("127.0.0.1-"), std::invalid_argument);
  EXPECT_THROW(parse_source_addresses("0.0.0.0-255.255.255.255"), std::invalid_argument);
  EXPECT_EQ(parse_source_addresses("10.0.0.0-10.0.255.255").size(), 65536u);
  EXPECT_THROW(parse_source_addresses("10.0.0.0-10.0.255.255,10.1.0.0"), std::invalid_argument);
}
