#include "dataplane/worker.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <future>
#include <stdexcept>
#include <string>

#include "common/cpu_relax.hpp"
#include "common/guest_fault.hpp"
#include "common/steady_clock.hpp"
#include "io/eventfd.hpp"

namespace vnet::dataplane {

Worker::Worker(WorkerOptions options)
    : options_(std::move(options)),
      busy_poll_us_(options_.busy_poll_us),
      adaptive_(uint64_t{options_.adaptive_spin_us} * 1000) {
    epoll_fd_.reset(::epoll_create1(EPOLL_CLOEXEC));
    wake_fd_ = io::make_eventfd();
    timer_fd_.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    if (!epoll_fd_ || !timer_fd_) {
        throw std::runtime_error(std::string("worker: epoll/timerfd: ") + std::strerror(errno));
    }
    for (int fd : {wake_fd_.get(), timer_fd_.get()}) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
            throw std::runtime_error(std::string("worker: epoll_ctl: ") + std::strerror(errno));
        }
    }
}

Worker::~Worker() {
    stop();
}

void Worker::start() {
    if (running_.exchange(true)) {
        return;
    }
    install_guest_fault_handler();
    stop_requested_.store(false);
    thread_ = std::thread([this] { run(); });
    ::pthread_setname_np(thread_.native_handle(), options_.name.substr(0, 15).c_str());
    if (options_.cpu) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(*options_.cpu, &set);
        // Best effort: a CPU outside our affinity mask is reported by the caller's config check.
        ::pthread_setaffinity_np(thread_.native_handle(), sizeof(set), &set);
    }
}

void Worker::stop() {
    if (!running_.load()) {
        return;
    }
    stop_requested_.store(true);
    io::signal_eventfd(wake_fd_.get());
    if (thread_.joinable()) {
        thread_.join();
    }
    clock_ns_ = 0;  // a restarted worker does not count the stopped time as idle
    running_.store(false);
    run_commands();  // whatever was posted after the last round
}

void Worker::post(std::function<void()> command) {
    if (!running_.load()) {
        command();
        return;
    }
    {
        std::lock_guard lock(commands_mutex_);
        commands_.push_back(std::move(command));
    }
    commands_pending_.store(true, std::memory_order_release);
    io::signal_eventfd(wake_fd_.get());
}

void Worker::run_sync(std::function<void()> command) {
    if (!running_.load() || std::this_thread::get_id() == thread_.get_id()) {
        command();
        return;
    }
    std::promise<void> done;
    auto finished = done.get_future();
    post([&] {
        command();
        done.set_value();
    });
    finished.wait();
}

void Worker::adopt(std::unique_ptr<Engine> engine) {
    forget_registrations();
    // The worker owns the destination queues, so it is the one to configure
    // them; turning coalescing off may publish what was held (guest memory).
    Engine& e = *engine;
    uintptr_t fault_address = 0;
    if (!run_guarded([&] { e.configure_destinations(); }, &fault_address)) {
        e.on_guest_fault(fault_address);
    }
    engines_.push_back(std::move(engine));
}

void Worker::remove_engine(const Engine* engine) {
    forget_registrations();
    for (size_t i = 0; i < engines_.size(); ++i) {
        if (engines_[i].get() == engine) {
            // Its frames may be held waiting for more from this very engine.
            publish_held_rx(*engines_[i]);
            engines_.erase(engines_.begin() + static_cast<std::ptrdiff_t>(i));
            return;
        }
    }
}

void Worker::run_commands() {
    std::vector<std::function<void()>> batch;
    {
        std::lock_guard lock(commands_mutex_);
        batch.swap(commands_);
        commands_pending_.store(false, std::memory_order_relaxed);
    }
    if (batch.empty()) {
        return;
    }
    // A command may hand a ring to a port or take it away, and the control
    // thread closes the old kick fd once run_sync returns. Unregister now,
    // while every fd is still open: once closed, EPOLL_CTL_DEL fails with
    // EBADF and, since the front end still holds the same eventfd, the stale
    // entry stays in the epoll set; and a new fd that reuses the number would
    // look registered already and never be added (its kicks lost until the
    // 100 ms timeout). The next sleep registers what it needs afresh.
    forget_registrations();
    for (auto& command : batch) {
        command();
    }
}

bool Worker::run_round() {
    if (clock_ns_ == 0) {
        advance_clock(false);  // the first round: nothing to count yet
    }
    bool worked = false;
    destination_full_ = false;
    holding_ = false;
    for (auto& engine : engines_) {
        TurnResult turn;
        uintptr_t fault_address = 0;
        // A front end may truncate its memory file under us: the access
        // faults, run_guarded returns false, and only that port's queue stops.
        if (!run_guarded([&] { turn = engine->run_turn(clock_ns_); }, &fault_address)) {
            engine->on_guest_fault(fault_address);
            turn = TurnResult{0, 0, PathWait::not_ready};
        }
        worked |= turn.packets != 0;
        destination_full_ |= turn.wait == PathWait::destination;
        holding_ |= turn.wait == PathWait::holding;
    }
    advance_clock(worked);
    publish_due_rx(false);
    rounds_.store(rounds_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return worked;
}

// The round clock: one read as each round ends, and one as the worker
// wakes from a sleep; never per packet. Everything between two rounds and
// in the next one (the switches' turns, held RX deadlines, the spin
// decisions) uses it, since a read costs ~50 ns in a VM and three a round
// were 15 % of a busy switch worker's samples. It also splits busy vs idle
// time (metrics): the time since the last read is busy if the round that
// ends moved packets (before it came commands at most: a spin decision or
// a sleep ends with a read of its own) and idle otherwise.
void Worker::advance_clock(bool busy) {
    const uint64_t now = steady_now_ns();
    if (clock_ns_ != 0) {
        std::atomic<uint64_t>& total = busy ? busy_ns_ : idle_ns_;
        total.store(total.load(std::memory_order_relaxed) + (now - clock_ns_),
                    std::memory_order_relaxed);
    }
    clock_ns_ = now;
}

void Worker::run() {
    while (!stop_requested_.load(std::memory_order_relaxed)) {
        if (commands_pending_.load(std::memory_order_acquire)) {
            run_commands();
            advance_clock(false);  // a port added may take milliseconds: not packet work
        }
        if (run_round()) {
            backoff_.on_work();
            event_idle_since_ns_ = 0;
            if (adaptive_.idle()) {
                adaptive_.on_work(clock_ns_);  // an idle gap ended: learn it
            }
            continue;
        }
        if (holding_) {
            // An engine holds a burst for a full destination (a switch: at
            // most destination_hold_us, then it drops it): the guest that
            // must take it may be waiting for this very CPU. Give it away
            // once per round; on a CPU of its own this returns at once.
            sched_yield();
        }
        if (may_spin()) {
            // An empty round of the spin reads every ring index once; a
            // pause before the next keeps the spin from hammering the lines
            // the guests are writing. In adaptive mode it grows while
            // traffic streams, so the guest runs ahead (SpinBackoff).
            const bool streaming = options_.mode == WorkerMode::adaptive &&
                                   SpinBackoff::streaming(adaptive_.gap_ewma_ns());
            for (uint32_t i = backoff_.next_pauses(streaming); i != 0; --i) {
                cpu_relax();
            }
            // And gives the CPU away now and then (SpinBackoff), unless it
            // just did for a held burst. Poll mode, made for a CPU of its
            // own and preempted like any busy task, yields only by the
            // interval.
            const bool yield_per_interval = streaming || options_.mode == WorkerMode::poll;
            if (backoff_.yield_due(clock_ns_, yield_per_interval) && !holding_) {
                sched_yield();
            }
            // The pause and the yield are idle time: without this read the
            // next round that finds work would count them as busy (up to
            // ~10 us a round while a stream's pauses grow, a CPU given
            // away for a whole timeslice after a yield), and the busy
            // metric would read a spinning worker as loaded. An empty
            // round's read costs no packet anything.
            advance_clock(false);
            continue;
        }
        sleep_until_ready();
    }
    // Nothing filled may stay invisible to a guest once no one runs its ring.
    publish_due_rx(true);
}

bool Worker::may_spin() {
    switch (options_.mode) {
        case WorkerMode::poll:
            return true;
        case WorkerMode::adaptive:
            // A full destination's consumer must run first (see the header);
            // the idle gap still counts from this round.
            // Gaps count from the end of a round to the end of the one that
            // found work (its length included): the spin budget is tuned
            // to that: counted from rounds' starts they would come out
            // shorter and the worker would sleep too soon under a steady
            // sender (docs/BENCHMARKS.md, "Where the defaults come from").
            return adaptive_.keep_spinning(clock_ns_) && !destination_full_;
        case WorkerMode::event:
            break;
    }
    // Event mode: spin for busy_poll_us after every idle start, wake-ups
    // included, before paying for a sleep.
    const uint64_t now = clock_ns_;
    if (event_idle_since_ns_ == 0) {
        event_idle_since_ns_ = now;
    }
    if (now - event_idle_since_ns_ <
        uint64_t{busy_poll_us_.load(std::memory_order_relaxed)} * 1000) {
        return true;
    }
    event_idle_since_ns_ = 0;
    return false;
}

uint64_t Worker::publish_due_rx(bool all) {
    uint64_t earliest = 0;
    for (const auto& engine : engines_) {
        // Port-local state only: no guest memory is read here.
        uint64_t deadline = engine->held_rx_deadline();
        if (deadline == 0) {
            continue;
        }
        if (!all) {
            if (deadline > clock_ns_) {
                earliest = earliest == 0 ? deadline : std::min(earliest, deadline);
                continue;
            }
        }
        publish_held_rx(*engine);
    }
    return earliest;
}

void Worker::publish_held_rx(Engine& engine) {
    // Publishing writes the guest's used ring: guarded like a turn.
    uintptr_t fault_address = 0;
    if (!run_guarded([&] { engine.publish_held_rx(); }, &fault_address)) {
        engine.on_guest_fault(fault_address);
    }
}

// Why a timerfd and not epoll_wait's timeout: that is in milliseconds, so a
// 50 us rx_usecs would cost a guest up to 1 ms; epoll_pwait2 takes
// nanoseconds but needs Linux 5.11 and glibc 2.35. The timer stays
// registered; it is re-armed only when the earliest deadline changes (one
// syscall per sleep at most, and only while frames are held), and one that
// fires after its frames went out by count just costs an empty round.
void Worker::arm_rx_timer(uint64_t deadline_ns) {
    if (deadline_ns == 0 || deadline_ns == timer_armed_ns_) {
        return;
    }
    itimerspec spec{};
    spec.it_value.tv_sec = static_cast<time_t>(deadline_ns / 1000000000);
    spec.it_value.tv_nsec = static_cast<long>(deadline_ns % 1000000000);
    if (::timerfd_settime(timer_fd_.get(), TFD_TIMER_ABSTIME, &spec, nullptr) == 0) {
        timer_armed_ns_ = deadline_ns;
    }
    // On failure (not expected for a valid absolute time) the 100 ms epoll
    // timeout still bounds how long the frames wait.
}

void Worker::want(const ports::WaitSpec& spec) {
    if (spec.fd < 0 || spec.events == 0) {
        return;
    }
    for (ports::WaitSpec& w : wanted_) {
        if (w.fd == spec.fd) {
            w.events |= spec.events;
            w.eventfd |= spec.eventfd;
            w.kicks = w.kicks != nullptr ? w.kicks : spec.kicks;
            return;
        }
    }
    wanted_.push_back(spec);
}

void Worker::sleep_until_ready() {
    wanted_.clear();
    const Engine::Want want_fd = [this](const ports::WaitSpec& s) { want(s); };
    for (auto& engine : engines_) {
        // Arming turns the guests' kicks back on and re-checks their rings:
        // false means work came meanwhile (or a turn ran out of budget), so
        // look again instead. It writes guest memory (the rings' event
        // suppression), so it runs guarded like a turn does.
        bool may_sleep = true;
        uintptr_t fault_address = 0;
        if (!run_guarded([&] { may_sleep = engine->prepare_sleep(want_fd); }, &fault_address)) {
            engine->on_guest_fault(fault_address);
            return;
        }
        if (!may_sleep) {
            return;
        }
    }
    update_registrations();
    // A stream's held tail goes out before the sleep instead of waiting for
    // the timer: a wake-up costs more than the hold saves.
    for (const auto& engine : engines_) {
        uintptr_t fault_address = 0;
        if (!run_guarded([&] { engine->publish_rx_before_sleep(); }, &fault_address)) {
            engine->on_guest_fault(fault_address);
        }
    }
    // Held guest RX frames bound the sleep: the earliest one is due when
    // the timer fires, with or without more traffic.
    arm_rx_timer(publish_due_rx(false));
    sleeps_.store(sleeps_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);

    epoll_event ready[32];
    // The timeout bounds what a missed wake-up could cost (a front end that
    // never kicks, a ring that is not ready yet): look again every 100 ms.
    int n = ::epoll_wait(epoll_fd_.get(), ready, 32, 100);
    advance_clock(false);
    for (int i = 0; i < n; ++i) {
        int fd = ready[i].data.fd;
        if (fd == timer_fd_.get()) {
            timer_armed_ns_ = 0;  // fired: the round after this wake-up publishes
        }
        bool drain = fd == wake_fd_.get() || fd == timer_fd_.get();
        packet::Counter* kicks = nullptr;
        for (const ports::WaitSpec& r : registered_) {
            if (r.fd == fd && r.eventfd) {
                drain = true;
                kicks = r.kicks;
            }
        }
        // Eventfds are drained so level-triggered epoll stops reporting
        // them (a timerfd reads as the same 8-byte counter); a tap fd is
        // never read here (that would eat a packet). A kick eventfd's value
        // is the number of kicks since the last read: counted per wake-up.
        if (drain) {
            const uint64_t value = io::drain_eventfd(fd);
            if (kicks != nullptr) {
                kicks->add(value);
            }
        }
    }
}

void Worker::update_registrations() {
    // Drop what is no longer wanted (or wanted with other events), then add.
    for (size_t i = 0; i < registered_.size();) {
        ports::WaitSpec& r = registered_[i];
        bool keep = false;
        for (const ports::WaitSpec& w : wanted_) {
            if (w.fd == r.fd && w.events == r.events) {
                keep = true;
                r.kicks = w.kicks;  // the counter of the ring that wants it now
            }
        }
        if (keep) {
            ++i;
            continue;
        }
        ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, r.fd, nullptr);
        registered_[i] = registered_.back();
        registered_.pop_back();
    }
    for (const ports::WaitSpec& w : wanted_) {
        bool present = false;
        for (const ports::WaitSpec& r : registered_) {
            present |= r.fd == w.fd;
        }
        if (present) {
            continue;
        }
        epoll_event ev{};
        ev.events = w.events;
        ev.data.fd = w.fd;
        if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, w.fd, &ev) == 0) {
            registered_.push_back(w);
        }
    }
}

void Worker::forget_registrations() {
    // Engines changed: their fds may be closed or reused by the control plane.
    for (const ports::WaitSpec& r : registered_) {
        ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, r.fd, nullptr);
    }
    registered_.clear();
}

}  // namespace vnet::dataplane
