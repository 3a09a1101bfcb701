// The counter table: every row names a member of its own (with the
// table's static_assert that the rows hold as many Counters as
// QueueCounters has, every member has exactly one row), and reset zeroes
// what the rows name.
#include "packet/queue_counter_table.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string_view>

namespace vnet::packet {
namespace {

// Gives every cell of every row a value of its own: 1, 2, 3, ... in table order.
void number_every_cell(QueueCounters& c) {
    uint64_t value = 0;
    for (const QueueCounterRow& row : kQueueCounterRows) {
        for (Counter& cell : row.cells(c)) {
            cell.add(++value);
        }
    }
}

TEST(QueueCounterTable, every_row_names_a_member_of_its_own) {
    QueueCounters c;
    number_every_cell(c);
    // Two rows naming one member would have added twice to it.
    uint64_t expected = 0;
    for (const QueueCounterRow& row : kQueueCounterRows) {
        const std::span<const Counter> cells = row.cells(std::as_const(c));
        ASSERT_EQ(cells.size(), row.cell_count()) << row.name;
        for (const Counter& cell : cells) {
            EXPECT_EQ(cell.get(), ++expected) << row.name;
        }
    }
    EXPECT_EQ(expected, queue_counter_cells());
}

TEST(QueueCounterTable, rows_are_the_members_the_datapath_counts_in) {
    QueueCounters c;
    c.count_burst(4, 240);
    c.count_drop(DropReason::policed, 2);
    c.gro_segments.add(3);
    for (const QueueCounterRow& row : kQueueCounterRows) {
        const std::span<const Counter> cells = row.cells(std::as_const(c));
        if (row.name == "packets") {
            EXPECT_EQ(cells[0].get(), 4u);
        } else if (row.name == "bytes") {
            EXPECT_EQ(cells[0].get(), 240u);
        } else if (row.name == "burst_size") {
            EXPECT_EQ(cells[QueueCounters::histogram_bucket(4)].get(), 1u);
            EXPECT_EQ(row.cell_label(QueueCounters::histogram_bucket(4)), "4-7");
        } else if (row.name == "drops") {
            EXPECT_EQ(cells[static_cast<size_t>(DropReason::policed)].get(), 2u);
            EXPECT_EQ(row.cell_label(static_cast<size_t>(DropReason::policed)), "policed");
        } else if (row.name == "gro_segments") {
            EXPECT_EQ(cells[0].get(), 3u);
        }
    }
}

TEST(QueueCounterTable, names_and_stats_pointers_are_distinct_and_every_row_has_help) {
    std::set<std::string_view> names;
    std::set<std::string_view> pointers;
    for (const QueueCounterRow& row : kQueueCounterRows) {
        EXPECT_TRUE(names.insert(row.name).second) << row.name << " twice";
        EXPECT_TRUE(pointers.insert(row.stats_pointer).second) << row.stats_pointer << " twice";
        EXPECT_EQ(row.stats_pointer.substr(0, 1), "/") << row.name;
        EXPECT_FALSE(row.help.empty()) << row.name;
        // vnetctl show's columns are numbers: a row of many counters is not one.
        EXPECT_TRUE(row.show_column == ShowColumn::no || row.shape == CounterShape::single)
            << row.name;
    }
}

TEST(QueueCounterTable, reset_zeroes_every_row) {
    QueueCounters c;
    number_every_cell(c);
    c.reset();
    for (const QueueCounterRow& row : kQueueCounterRows) {
        for (const Counter& cell : row.cells(std::as_const(c))) {
            EXPECT_EQ(cell.get(), 0u) << row.name;
        }
    }
}

}  // namespace
}  // namespace vnet::packet
